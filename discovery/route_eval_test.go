package discovery

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
)

// The router's evaluation: labelled on-topic intents (find_eval.json, the
// tuning half, and find_holdout.json) must be routed to their tool, and
// the off-topic needs of route_offtopic.json (its "tune" and "holdout"
// halves) must get no match.

// The evaluation sets are the finder's (discovery/finder/testdata).
var routeSets = filepath.Join("finder", "testdata")

// findIntent is a need labelled with the tool it is for.
type findIntent struct {
	Query string `json:"query"`
	Key   string `json:"key"`
}

// findLoadIntents reads a set of labelled needs.
func findLoadIntents(t testing.TB, name string) []findIntent {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(routeSets, name))
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	var set struct {
		Intents []findIntent `json:"intents"`
	}
	if err := json.Unmarshal(raw, &set); err != nil {
		t.Fatalf("decode %s: %v", name, err)
	}
	return set.Intents
}

// routeOffTopic returns the off-topic needs: the tuning half and the
// held-out half.
func routeOffTopic(t testing.TB) (tune, holdout []string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(routeSets, "route_offtopic.json"))
	if err != nil {
		t.Fatalf("read route_offtopic.json: %v", err)
	}
	var set struct {
		Tune    []string `json:"tune"`
		Holdout []string `json:"holdout"`
	}
	if err := json.Unmarshal(raw, &set); err != nil {
		t.Fatalf("decode route_offtopic.json: %v", err)
	}
	return set.Tune, set.Holdout
}

// routeRates are the router's rates on one half of the sets.
type routeRates struct {
	onTopic, routed, top1 int // on-topic intents, routed to their tool, ranked first by find
	offTopic, refused     int // off-topic needs, answered with no match
	misses                []string
}

func (r routeRates) routedRate() float64  { return float64(r.routed) / float64(r.onTopic) }
func (r routeRates) top1Rate() float64    { return float64(r.top1) / float64(r.onTopic) }
func (r routeRates) refusedRate() float64 { return float64(r.refused) / float64(r.offTopic) }

func (r routeRates) String() string {
	return fmt.Sprintf("on-topic routed %.3f (%d/%d), find top-1 %.3f (%d/%d), off-topic refused %.3f (%d/%d)",
		r.routedRate(), r.routed, r.onTopic, r.top1Rate(), r.top1, r.onTopic, r.refusedRate(), r.refused, r.offTopic)
}

// routeEvaluate runs the sets through the finder and routeAccepts with the
// threshold minScore, as Service.Route decides.
func routeEvaluate(s *Service, intents []findIntent, offTopic []string, minScore float64) routeRates {
	var r routeRates
	for _, in := range intents {
		r.onTopic++
		ms := s.finder.Find(in.Query, 1)
		if len(ms) > 0 && ms[0].Key == in.Key {
			r.top1++
			if routeAccepts(ms[0], minScore) {
				r.routed++
				continue
			}
		}
		got := "nothing"
		if len(ms) > 0 {
			got = fmt.Sprintf("%s %.3f corrected=%v", ms[0].Key, ms[0].Score, ms[0].Corrected)
		}
		r.misses = append(r.misses, fmt.Sprintf("on-topic %q (%s): got %s", in.Query, in.Key, got))
	}
	for _, q := range offTopic {
		r.offTopic++
		ms := s.finder.Find(q, 1)
		if len(ms) == 0 || !routeAccepts(ms[0], minScore) {
			r.refused++
			continue
		}
		r.misses = append(r.misses, fmt.Sprintf("off-topic %q: routed to %s %.3f %q", q, ms[0].Key, ms[0].Score, ms[0].MatchedTokens))
	}
	return r
}

// TestRouteEval requires, on the tuning half, on-topic intents routed to
// their tool ≥ 95 %, find's top-1 ≥ 95 % and off-topic needs refused
// ≥ 90 % (the decision Service.Route takes, checked against Route itself);
// the held-out half is reported, with a lower floor.
func TestRouteEval(t *testing.T) {
	s := discNewService(t, discTestBase, nil)
	offTune, offHold := routeOffTopic(t)
	if n := len(offTune) + len(offHold); n < 80 {
		t.Fatalf("%d off-topic needs, want at least 80", n)
	}
	tune := routeEvaluate(s, findLoadIntents(t, "find_eval.json"), offTune, MinMatchScore)
	hold := routeEvaluate(s, findLoadIntents(t, "find_holdout.json"), offHold, MinMatchScore)
	t.Logf("tune:    %s", tune)
	t.Logf("holdout: %s", hold)
	for _, m := range tune.misses {
		t.Logf("tune miss: %s", m)
	}
	for _, m := range hold.misses {
		t.Logf("holdout miss: %s", m)
	}
	if tune.routedRate() < 0.95 || tune.top1Rate() < 0.95 || tune.refusedRate() < 0.90 {
		t.Errorf("tune: %s; want routed ≥ 0.95, top-1 ≥ 0.95, refused ≥ 0.90", tune)
	}
	// The held-out half has a lower floor: a guard against tuning that
	// only fits the tuning half.
	if hold.routedRate() < 0.90 || hold.top1Rate() < 0.90 || hold.refusedRate() < 0.85 {
		t.Errorf("holdout: %s; want routed ≥ 0.90, top-1 ≥ 0.90, refused ≥ 0.85", hold)
	}

	// Route itself agrees with the evaluation's decision.
	ctx := context.Background()
	for _, q := range offTune {
		plan, err := s.Route(ctx, q, nil)
		if err != nil {
			t.Fatal(err)
		}
		ms := s.finder.Find(q, 1)
		want := len(ms) > 0 && routeAccepts(ms[0], MinMatchScore)
		if plan.Matched != want {
			t.Errorf("Route(%q).Matched = %v, the evaluation says %v", q, plan.Matched, want)
		}
	}
}

// TestRouteThresholdCurve logs the rates of both halves against the score
// threshold (run with -v); the table in BENCHMARKS.md comes from it.
func TestRouteThresholdCurve(t *testing.T) {
	s := discNewService(t, discTestBase, nil)
	offTune, offHold := routeOffTopic(t)
	evalSet, holdSet := findLoadIntents(t, "find_eval.json"), findLoadIntents(t, "find_holdout.json")
	t.Logf("| threshold | tune routed | tune refused | holdout routed | holdout refused |")
	t.Logf("|---|---|---|---|---|")
	for i := 0; i <= 20; i++ {
		th := 0.30 + 0.02*float64(i)
		a := routeEvaluate(s, evalSet, offTune, th)
		b := routeEvaluate(s, holdSet, offHold, th)
		mark := ""
		if fmt.Sprintf("%.2f", th) == fmt.Sprintf("%.2f", MinMatchScore) {
			mark = " ←"
		}
		t.Logf("| %.2f%s | %.3f | %.3f | %.3f | %.3f |", th, mark, a.routedRate(), a.refusedRate(), b.routedRate(), b.refusedRate())
	}
}

// TestRouteOffTopicSet: at least 80 needs, none twice (within or across
// the halves, or among the on-topic intents), both halves of comparable
// size, and needs in other scripts than Latin in each half.
func TestRouteOffTopicSet(t *testing.T) {
	tune, hold := routeOffTopic(t)
	if len(tune)+len(hold) < 80 || len(tune) < 30 || len(hold) < 30 {
		t.Errorf("off-topic halves of %d and %d needs, want ≥ 80 in all, ≥ 30 each", len(tune), len(hold))
	}
	seen := map[string]string{}
	for _, set := range []string{"find_eval.json", "find_holdout.json"} {
		for _, in := range findLoadIntents(t, set) {
			seen[strings.ToLower(in.Query)] = set
		}
	}
	for name, half := range map[string][]string{"tune": tune, "holdout": hold} {
		nonLatin := 0
		for _, q := range half {
			k := strings.ToLower(q)
			if prev, dup := seen[k]; dup {
				t.Errorf("%q (%s) is also in %s", q, name, prev)
			}
			seen[k] = name
			for _, r := range q {
				if r > unicode.MaxLatin1 && !unicode.Is(unicode.Latin, r) && unicode.IsLetter(r) {
					nonLatin++
					break
				}
			}
		}
		if nonLatin < 3 {
			t.Errorf("%s has %d needs in non-Latin scripts, want several", name, nonLatin)
		}
	}
}
