package club

import "github.com/seed1284c1d2/svc/discovery/routedoc"

// RouteDocs describes the club's routes (Routes) for discovery's
// documents (discovery.Config.FreeRoutes).
func RouteDocs() []routedoc.Route {
	wallet := map[string]any{"type": "string", "pattern": "^0x[0-9a-fA-F]{40}$", "description": "Public EVM address (0x + 40 hex digits)."}
	return []routedoc.Route{
		{Method: "GET", Path: ManifestPath, OperationID: "clubManifest", Tag: routedoc.TagClub,
			Summary:  "Membership club manifest and tiers",
			Params:   []routedoc.Param{{Name: QueryRef, In: "query", Description: "Referral code to attribute.", Schema: routedoc.String("")}},
			Response: routedoc.AnyObject("Club manifest: tiers from the settlement ledger (FOUNDING, INSIDER, PRIME), referral and lounge routes.")},
		{Method: "GET", Path: BeaconPath, OperationID: "clubBeacon", Tag: routedoc.TagClub,
			Summary: "Membership club invite beacon", Response: routedoc.AnyObject("Club invite manifest.")},
		{Method: "GET", Path: StatusPath, OperationID: "clubStatus", Tag: routedoc.TagClub,
			Summary:  "Verified membership status of a wallet (from the settlement ledger)",
			Params:   []routedoc.Param{{Name: "wallet", In: "query", Required: true, Description: "Public EVM address.", Schema: wallet}},
			Response: routedoc.AnyObject("Membership status.")},
		{Method: "POST", Path: ReferralCreatePath, OperationID: "clubReferralCreate", Tag: routedoc.TagClub,
			Summary:  "Create the deterministic, non-custodial referral code of a wallet",
			Body:     map[string]any{"type": "object", "properties": map[string]any{"wallet": wallet}, "required": []string{"wallet"}, "additionalProperties": false},
			Response: routedoc.AnyObject("The code and its share links.")},
		{Method: "GET", Path: ReferralPathPrefix + "{code}", OperationID: "clubReferralStatus", Tag: routedoc.TagClub,
			Summary:  "Referral conversion status of a code",
			Params:   []routedoc.Param{{Name: "code", In: "path", Required: true, Description: "Referral code.", Schema: routedoc.String("")}},
			Response: routedoc.AnyObject("Conversion status.")},
		{Method: "GET", Path: LoungePath, OperationID: "clubLounge", Tag: routedoc.TagClub,
			Summary:     "Capped list of self-declared lounge entries",
			Description: "Newest first, self-declared. Roles and interests are normalized terms (pattern in the schema) safe to show as is; agentName is plain text to escape.",
			Response:    LoungeListSchema()},
		{Method: "POST", Path: CheckInPath, OperationID: "clubLoungeCheckIn", Tag: routedoc.TagClub,
			Summary:     "Opt-in lounge check-in (wallet ownership is not authenticated)",
			Description: "One entry per wallet (latest wins); entries expire after 24 h and are marked self-declared. Role and interests are free-form terms, normalized (NFC, lower case, separators to '-') and checked as the body schema describes.",
			Body:        CheckInSchema(),
			Response:    CheckInResultSchema()},
	}
}
