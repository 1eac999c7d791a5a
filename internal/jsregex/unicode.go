package jsregex

import (
	"sort"
	"sync"
	"unicode"
)

// This file holds the character data of the translator: character sets, the
// Unicode property escapes (\p{...}) and the case-insensitive
// canonicalization of JavaScript. Everything comes from Go's unicode
// package (Unicode 15.0.0); characters assigned in later Unicode versions
// can therefore differ from a newer JavaScript engine.

// regexRange is an inclusive range of character values.
type regexRange struct{ lo, hi rune }

// regexSet is a set of character values: sorted, non-overlapping,
// non-adjacent ranges. The zero value is the empty set.
type regexSet []regexRange

// regexMaxRune is the largest code point.
const regexMaxRune = 0x10FFFF

func regexSetOf(lo, hi rune) regexSet { return regexSet{{lo, hi}} }

func regexSetChars(cs ...rune) regexSet {
	var s regexSet
	for _, c := range cs {
		s = s.union(regexSetOf(c, c))
	}
	return s
}

// regexNormalize sorts and merges ranges in place.
func regexNormalize(rs []regexRange) regexSet {
	if len(rs) == 0 {
		return nil
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].lo < rs[j].lo })
	out := rs[:1]
	for _, r := range rs[1:] {
		last := &out[len(out)-1]
		if r.lo <= last.hi+1 {
			if r.hi > last.hi {
				last.hi = r.hi
			}
			continue
		}
		out = append(out, r)
	}
	return regexSet(out)
}

// union returns s ∪ t as a new set.
func (s regexSet) union(t regexSet) regexSet {
	if len(t) == 0 {
		return s
	}
	if len(s) == 0 {
		return t
	}
	rs := make([]regexRange, 0, len(s)+len(t))
	rs = append(rs, s...)
	rs = append(rs, t...)
	return regexNormalize(rs)
}

// negate returns the complement of s within 0..max.
func (s regexSet) negate(max rune) regexSet {
	var out regexSet
	next := rune(0)
	for _, r := range s {
		if r.lo > max {
			break
		}
		if r.lo > next {
			out = append(out, regexRange{next, r.lo - 1})
		}
		next = r.hi + 1
	}
	if next <= max {
		out = append(out, regexRange{next, max})
	}
	return out
}

// minus returns s \ t.
func (s regexSet) minus(t regexSet) regexSet {
	return s.negate(regexMaxRune).union(t).negate(regexMaxRune)
}

// contains reports whether c is in s.
func (s regexSet) contains(c rune) bool {
	i := sort.Search(len(s), func(i int) bool { return s[i].hi >= c })
	return i < len(s) && s[i].lo <= c
}

// single returns the only member of a one-character set.
func (s regexSet) single() (rune, bool) {
	if len(s) == 1 && s[0].lo == s[0].hi {
		return s[0].lo, true
	}
	return 0, false
}

// regexSetFromTables converts unicode range tables to a set.
func regexSetFromTables(ts ...*unicode.RangeTable) regexSet {
	var rs []regexRange
	for _, t := range ts {
		for _, r := range t.R16 {
			rs = regexAppendStrided(rs, rune(r.Lo), rune(r.Hi), rune(r.Stride))
		}
		for _, r := range t.R32 {
			rs = regexAppendStrided(rs, rune(r.Lo), rune(r.Hi), rune(r.Stride))
		}
	}
	return regexNormalize(rs)
}

func regexAppendStrided(rs []regexRange, lo, hi, stride rune) []regexRange {
	if stride == 1 {
		return append(rs, regexRange{lo, hi})
	}
	for c := lo; c <= hi; c += stride {
		rs = append(rs, regexRange{c, c})
	}
	return rs
}

// The sets of the character class escapes and of the dot.
var (
	regexDigitSet = regexSetOf('0', '9')
	regexWordSet  = regexSet{{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}
	// regexSpaceSet is WhiteSpace and LineTerminator of ECMA-262.
	regexSpaceSet = regexSet{{0x09, 0x0D}, {0x20, 0x20}, {0xA0, 0xA0}, {0x1680, 0x1680},
		{0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F},
		{0x3000, 0x3000}, {0xFEFF, 0xFEFF}}
	// regexLineTerminators are the characters the dot, ^ and $ treat as
	// line ends.
	regexLineTerminators = regexSet{{0x0A, 0x0A}, {0x0D, 0x0D}, {0x2028, 0x2029}}
)

// regexGCNames maps every General_Category value name and alias that
// ECMA-262 accepts to Go's category name.
var regexGCNames = map[string]string{
	"C": "C", "Other": "C", "Cc": "Cc", "Control": "Cc", "cntrl": "Cc", "Cf": "Cf", "Format": "Cf",
	"Cn": "Cn", "Unassigned": "Cn", "Co": "Co", "Private_Use": "Co", "Cs": "Cs", "Surrogate": "Cs",
	"L": "L", "Letter": "L", "LC": "LC", "Cased_Letter": "LC", "Ll": "Ll", "Lowercase_Letter": "Ll",
	"Lm": "Lm", "Modifier_Letter": "Lm", "Lo": "Lo", "Other_Letter": "Lo", "Lt": "Lt",
	"Titlecase_Letter": "Lt", "Lu": "Lu", "Uppercase_Letter": "Lu", "M": "M", "Mark": "M",
	"Combining_Mark": "M", "Mc": "Mc", "Spacing_Mark": "Mc", "Me": "Me", "Enclosing_Mark": "Me",
	"Mn": "Mn", "Nonspacing_Mark": "Mn", "N": "N", "Number": "N", "Nd": "Nd", "Decimal_Number": "Nd",
	"digit": "Nd", "Nl": "Nl", "Letter_Number": "Nl", "No": "No", "Other_Number": "No", "P": "P",
	"Punctuation": "P", "punct": "P", "Pc": "Pc", "Connector_Punctuation": "Pc", "Pd": "Pd",
	"Dash_Punctuation": "Pd", "Pe": "Pe", "Close_Punctuation": "Pe", "Pf": "Pf",
	"Final_Punctuation": "Pf", "Pi": "Pi", "Initial_Punctuation": "Pi", "Po": "Po",
	"Other_Punctuation": "Po", "Ps": "Ps", "Open_Punctuation": "Ps", "S": "S", "Symbol": "S",
	"Sc": "Sc", "Currency_Symbol": "Sc", "Sk": "Sk", "Modifier_Symbol": "Sk", "Sm": "Sm",
	"Math_Symbol": "Sm", "So": "So", "Other_Symbol": "So", "Z": "Z", "Separator": "Z", "Zl": "Zl",
	"Line_Separator": "Zl", "Zp": "Zp", "Paragraph_Separator": "Zp", "Zs": "Zs",
	"Space_Separator": "Zs",
}

// regexScriptAliases lists, for each script of Go's unicode.Scripts, the
// other names ECMA-262 accepts for it (PropertyValueAliases.txt).
var regexScriptAliases = map[string][]string{
	"Adlam":                  {"Adlm"},
	"Ahom":                   {},
	"Anatolian_Hieroglyphs":  {"Hluw"},
	"Arabic":                 {"Arab"},
	"Armenian":               {"Armn"},
	"Avestan":                {"Avst"},
	"Balinese":               {"Bali"},
	"Bamum":                  {"Bamu"},
	"Bassa_Vah":              {"Bass"},
	"Batak":                  {"Batk"},
	"Bengali":                {"Beng"},
	"Bhaiksuki":              {"Bhks"},
	"Bopomofo":               {"Bopo"},
	"Brahmi":                 {"Brah"},
	"Braille":                {"Brai"},
	"Buginese":               {"Bugi"},
	"Buhid":                  {"Buhd"},
	"Canadian_Aboriginal":    {"Cans"},
	"Carian":                 {"Cari"},
	"Caucasian_Albanian":     {"Aghb"},
	"Chakma":                 {"Cakm"},
	"Cham":                   {},
	"Cherokee":               {"Cher"},
	"Chorasmian":             {"Chrs"},
	"Common":                 {"Zyyy"},
	"Coptic":                 {"Copt", "Qaac"},
	"Cuneiform":              {"Xsux"},
	"Cypriot":                {"Cprt"},
	"Cypro_Minoan":           {"Cpmn"},
	"Cyrillic":               {"Cyrl"},
	"Deseret":                {"Dsrt"},
	"Devanagari":             {"Deva"},
	"Dives_Akuru":            {"Diak"},
	"Dogra":                  {"Dogr"},
	"Duployan":               {"Dupl"},
	"Egyptian_Hieroglyphs":   {"Egyp"},
	"Elbasan":                {"Elba"},
	"Elymaic":                {"Elym"},
	"Ethiopic":               {"Ethi"},
	"Georgian":               {"Geor"},
	"Glagolitic":             {"Glag"},
	"Gothic":                 {"Goth"},
	"Grantha":                {"Gran"},
	"Greek":                  {"Grek"},
	"Gujarati":               {"Gujr"},
	"Gunjala_Gondi":          {"Gong"},
	"Gurmukhi":               {"Guru"},
	"Han":                    {"Hani"},
	"Hangul":                 {"Hang"},
	"Hanifi_Rohingya":        {"Rohg"},
	"Hanunoo":                {"Hano"},
	"Hatran":                 {"Hatr"},
	"Hebrew":                 {"Hebr"},
	"Hiragana":               {"Hira"},
	"Imperial_Aramaic":       {"Armi"},
	"Inherited":              {"Zinh", "Qaai"},
	"Inscriptional_Pahlavi":  {"Phli"},
	"Inscriptional_Parthian": {"Prti"},
	"Javanese":               {"Java"},
	"Kaithi":                 {"Kthi"},
	"Kannada":                {"Knda"},
	"Katakana":               {"Kana"},
	"Kawi":                   {},
	"Kayah_Li":               {"Kali"},
	"Kharoshthi":             {"Khar"},
	"Khitan_Small_Script":    {"Kits"},
	"Khmer":                  {"Khmr"},
	"Khojki":                 {"Khoj"},
	"Khudawadi":              {"Sind"},
	"Lao":                    {"Laoo"},
	"Latin":                  {"Latn"},
	"Lepcha":                 {"Lepc"},
	"Limbu":                  {"Limb"},
	"Linear_A":               {"Lina"},
	"Linear_B":               {"Linb"},
	"Lisu":                   {},
	"Lycian":                 {"Lyci"},
	"Lydian":                 {"Lydi"},
	"Mahajani":               {"Mahj"},
	"Makasar":                {"Maka"},
	"Malayalam":              {"Mlym"},
	"Mandaic":                {"Mand"},
	"Manichaean":             {"Mani"},
	"Marchen":                {"Marc"},
	"Masaram_Gondi":          {"Gonm"},
	"Medefaidrin":            {"Medf"},
	"Meetei_Mayek":           {"Mtei"},
	"Mende_Kikakui":          {"Mend"},
	"Meroitic_Cursive":       {"Merc"},
	"Meroitic_Hieroglyphs":   {"Mero"},
	"Miao":                   {"Plrd"},
	"Modi":                   {},
	"Mongolian":              {"Mong"},
	"Mro":                    {"Mroo"},
	"Multani":                {"Mult"},
	"Myanmar":                {"Mymr"},
	"Nabataean":              {"Nbat"},
	"Nag_Mundari":            {"Nagm"},
	"Nandinagari":            {"Nand"},
	"New_Tai_Lue":            {"Talu"},
	"Newa":                   {},
	"Nko":                    {"Nkoo"},
	"Nushu":                  {"Nshu"},
	"Nyiakeng_Puachue_Hmong": {"Hmnp"},
	"Ogham":                  {"Ogam"},
	"Ol_Chiki":               {"Olck"},
	"Old_Hungarian":          {"Hung"},
	"Old_Italic":             {"Ital"},
	"Old_North_Arabian":      {"Narb"},
	"Old_Permic":             {"Perm"},
	"Old_Persian":            {"Xpeo"},
	"Old_Sogdian":            {"Sogo"},
	"Old_South_Arabian":      {"Sarb"},
	"Old_Turkic":             {"Orkh"},
	"Old_Uyghur":             {"Ougr"},
	"Oriya":                  {"Orya"},
	"Osage":                  {"Osge"},
	"Osmanya":                {"Osma"},
	"Pahawh_Hmong":           {"Hmng"},
	"Palmyrene":              {"Palm"},
	"Pau_Cin_Hau":            {"Pauc"},
	"Phags_Pa":               {"Phag"},
	"Phoenician":             {"Phnx"},
	"Psalter_Pahlavi":        {"Phlp"},
	"Rejang":                 {"Rjng"},
	"Runic":                  {"Runr"},
	"Samaritan":              {"Samr"},
	"Saurashtra":             {"Saur"},
	"Sharada":                {"Shrd"},
	"Shavian":                {"Shaw"},
	"Siddham":                {"Sidd"},
	"SignWriting":            {"Sgnw"},
	"Sinhala":                {"Sinh"},
	"Sogdian":                {"Sogd"},
	"Sora_Sompeng":           {"Sora"},
	"Soyombo":                {"Soyo"},
	"Sundanese":              {"Sund"},
	"Syloti_Nagri":           {"Sylo"},
	"Syriac":                 {"Syrc"},
	"Tagalog":                {"Tglg"},
	"Tagbanwa":               {"Tagb"},
	"Tai_Le":                 {"Tale"},
	"Tai_Tham":               {"Lana"},
	"Tai_Viet":               {"Tavt"},
	"Takri":                  {"Takr"},
	"Tamil":                  {"Taml"},
	"Tangsa":                 {"Tnsa"},
	"Tangut":                 {"Tang"},
	"Telugu":                 {"Telu"},
	"Thaana":                 {"Thaa"},
	"Thai":                   {},
	"Tibetan":                {"Tibt"},
	"Tifinagh":               {"Tfng"},
	"Tirhuta":                {"Tirh"},
	"Toto":                   {},
	"Ugaritic":               {"Ugar"},
	"Vai":                    {"Vaii"},
	"Vithkuqi":               {"Vith"},
	"Wancho":                 {"Wcho"},
	"Warang_Citi":            {"Wara"},
	"Yezidi":                 {"Yezi"},
	"Yi":                     {"Yiii"},
	"Zanabazar_Square":       {"Zanb"},
}

// regexNewerScripts are scripts of Unicode 16 and 17 that a current
// JavaScript engine knows and Go's tables do not: \p{Script=...} of them is
// rejected as unsupported rather than answered wrongly.
var regexNewerScripts = map[string]bool{
	"Garay": true, "Gara": true, "Gurung_Khema": true, "Gukh": true, "Kirat_Rai": true, "Krai": true,
	"Ol_Onal": true, "Onao": true, "Sunuwar": true, "Sunu": true, "Todhri": true, "Todr": true,
	"Tulu_Tigalari": true, "Tutg": true, "Beria_Erfe": true, "Berf": true, "Sidetic": true, "Sidt": true,
	"Tai_Yo": true, "Tayo": true, "Tolong_Siki": true, "Tols": true,
}

// regexBinaryNames maps the binary property names and aliases of
// ECMA-262 that the translator supports to a canonical name.
var regexBinaryNames = map[string]string{
	"ASCII": "ASCII", "ASCII_Hex_Digit": "ASCII_Hex_Digit", "AHex": "ASCII_Hex_Digit",
	"Alphabetic": "Alphabetic", "Alpha": "Alphabetic", "Any": "Any", "Assigned": "Assigned",
	"Bidi_Control": "Bidi_Control", "Bidi_C": "Bidi_Control", "Cased": "Cased", "Dash": "Dash",
	"Deprecated": "Deprecated", "Dep": "Deprecated", "Diacritic": "Diacritic", "Dia": "Diacritic",
	"Extender": "Extender", "Ext": "Extender", "Grapheme_Base": "Grapheme_Base", "Gr_Base": "Grapheme_Base",
	"Grapheme_Extend": "Grapheme_Extend", "Gr_Ext": "Grapheme_Extend", "Hex_Digit": "Hex_Digit",
	"Hex": "Hex_Digit", "IDS_Binary_Operator": "IDS_Binary_Operator", "IDSB": "IDS_Binary_Operator",
	"IDS_Trinary_Operator": "IDS_Trinary_Operator", "IDST": "IDS_Trinary_Operator",
	"ID_Continue": "ID_Continue", "IDC": "ID_Continue", "ID_Start": "ID_Start", "IDS": "ID_Start",
	"Ideographic": "Ideographic", "Ideo": "Ideographic", "Join_Control": "Join_Control",
	"Join_C": "Join_Control", "Logical_Order_Exception": "Logical_Order_Exception",
	"LOE": "Logical_Order_Exception", "Lowercase": "Lowercase", "Lower": "Lowercase", "Math": "Math",
	"Noncharacter_Code_Point": "Noncharacter_Code_Point", "NChar": "Noncharacter_Code_Point",
	"Pattern_Syntax": "Pattern_Syntax", "Pat_Syn": "Pattern_Syntax",
	"Pattern_White_Space": "Pattern_White_Space", "Pat_WS": "Pattern_White_Space",
	"Quotation_Mark": "Quotation_Mark", "QMark": "Quotation_Mark", "Radical": "Radical",
	"Regional_Indicator": "Regional_Indicator", "RI": "Regional_Indicator",
	"Sentence_Terminal": "Sentence_Terminal", "STerm": "Sentence_Terminal", "Soft_Dotted": "Soft_Dotted",
	"SD": "Soft_Dotted", "Terminal_Punctuation": "Terminal_Punctuation", "Term": "Terminal_Punctuation",
	"Unified_Ideograph": "Unified_Ideograph", "UIdeo": "Unified_Ideograph", "Uppercase": "Uppercase",
	"Upper": "Uppercase", "Variation_Selector": "Variation_Selector", "VS": "Variation_Selector",
	"White_Space": "White_Space", "space": "White_Space",
}

// regexUnsupportedBinary are binary properties of ECMA-262 whose data Go's
// unicode package does not carry.
var regexUnsupportedBinary = map[string]bool{
	"Bidi_Mirrored": true, "Bidi_M": true, "Case_Ignorable": true, "CI": true,
	"Changes_When_Casefolded": true, "CWCF": true, "Changes_When_Casemapped": true, "CWCM": true,
	"Changes_When_Lowercased": true, "CWL": true, "Changes_When_NFKC_Casefolded": true, "CWKCF": true,
	"Changes_When_Titlecased": true, "CWT": true, "Changes_When_Uppercased": true, "CWU": true,
	"Default_Ignorable_Code_Point": true, "DI": true, "Emoji": true, "Emoji_Component": true,
	"EComp": true, "Emoji_Modifier": true, "EMod": true, "Emoji_Modifier_Base": true, "EBase": true,
	"Emoji_Presentation": true, "EPres": true, "Extended_Pictographic": true, "ExtPict": true,
	"XID_Continue": true, "XIDC": true, "XID_Start": true, "XIDS": true,
}

// regexPropertyResult classifies a \p{...} body.
type regexPropertyResult int

const (
	regexPropertyOK regexPropertyResult = iota
	regexPropertyInvalid
	regexPropertyUnsupported
)

// regexProperty resolves the body of \p{...}: "Name=Value" or a lone
// General_Category value or binary property name.
func regexProperty(body string) (regexSet, regexPropertyResult) {
	name, value, hasValue := regexCut(body, '=')
	if hasValue {
		switch name {
		case "General_Category", "gc":
			if gc, ok := regexGCNames[value]; ok {
				return regexGCSet(gc), regexPropertyOK
			}
			return nil, regexPropertyInvalid
		case "Script", "sc":
			return regexScriptSet(value)
		case "Script_Extensions", "scx":
			if _, res := regexScriptSet(value); res == regexPropertyInvalid {
				return nil, regexPropertyInvalid
			}
			return nil, regexPropertyUnsupported
		}
		return nil, regexPropertyInvalid
	}
	if gc, ok := regexGCNames[name]; ok {
		return regexGCSet(gc), regexPropertyOK
	}
	if b, ok := regexBinaryNames[name]; ok {
		return regexBinarySet(b), regexPropertyOK
	}
	if regexUnsupportedBinary[name] {
		return nil, regexPropertyUnsupported
	}
	return nil, regexPropertyInvalid
}

func regexCut(s string, sep byte) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// regexUnicodeData holds the derived sets, computed once on first use.
type regexUnicodeData struct {
	assigned regexSet
	scripts  regexSet // union of all scripts
	byScript map[string]string
}

var regexUnicode = sync.OnceValue(func() *regexUnicodeData {
	d := &regexUnicodeData{byScript: make(map[string]string)}
	var all []*unicode.RangeTable
	for name, t := range unicode.Categories {
		if len(name) == 2 { // the two-letter categories partition the assigned code points
			all = append(all, t)
		}
	}
	d.assigned = regexSetFromTables(all...)
	var scripts []*unicode.RangeTable
	for name, t := range unicode.Scripts {
		scripts = append(scripts, t)
		d.byScript[name] = name
		for _, a := range regexScriptAliases[name] {
			d.byScript[a] = name
		}
	}
	d.scripts = regexSetFromTables(scripts...)
	return d
})

// regexGCSet returns the set of a General_Category value (Go name).
func regexGCSet(gc string) regexSet {
	switch gc {
	case "Cn":
		return regexUnicode().assigned.negate(regexMaxRune)
	case "C":
		return regexSetFromTables(unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs).
			union(regexUnicode().assigned.negate(regexMaxRune))
	case "LC":
		return regexSetFromTables(unicode.Lu, unicode.Ll, unicode.Lt)
	}
	return regexSetFromTables(unicode.Categories[gc])
}

// regexScriptSet returns the set of a Script value.
func regexScriptSet(v string) (regexSet, regexPropertyResult) {
	if v == "Unknown" || v == "Zzzz" {
		return regexUnicode().scripts.negate(regexMaxRune), regexPropertyOK
	}
	if name, ok := regexUnicode().byScript[v]; ok {
		return regexSetFromTables(unicode.Scripts[name]), regexPropertyOK
	}
	if regexNewerScripts[v] {
		return nil, regexPropertyUnsupported
	}
	return nil, regexPropertyInvalid
}

// regexBinarySet returns the set of a supported binary property; the
// derived ones follow DerivedCoreProperties.txt.
func regexBinarySet(name string) regexSet {
	p := unicode.Properties
	switch name {
	case "ASCII":
		return regexSetOf(0, 0x7F)
	case "Any":
		return regexSetOf(0, regexMaxRune)
	case "Assigned":
		return regexUnicode().assigned
	case "Alphabetic":
		return regexSetFromTables(unicode.Lu, unicode.Ll, unicode.Lt, unicode.Lm, unicode.Lo, unicode.Nl,
			p["Other_Alphabetic"])
	case "Lowercase":
		return regexSetFromTables(unicode.Ll, p["Other_Lowercase"])
	case "Uppercase":
		return regexSetFromTables(unicode.Lu, p["Other_Uppercase"])
	case "Cased":
		return regexSetFromTables(unicode.Ll, p["Other_Lowercase"], unicode.Lu, p["Other_Uppercase"], unicode.Lt)
	case "Math":
		return regexSetFromTables(unicode.Sm, p["Other_Math"])
	case "ID_Start":
		return regexIDStart()
	case "ID_Continue":
		return regexIDContinue()
	case "Grapheme_Extend":
		return regexSetFromTables(unicode.Me, unicode.Mn, p["Other_Grapheme_Extend"])
	case "Grapheme_Base":
		excl := regexSetFromTables(unicode.Cc, unicode.Cf, unicode.Cs, unicode.Co, unicode.Zl, unicode.Zp,
			unicode.Me, unicode.Mn, p["Other_Grapheme_Extend"]).union(regexUnicode().assigned.negate(regexMaxRune))
		return excl.negate(regexMaxRune)
	}
	return regexSetFromTables(p[name])
}

// regexIDStart is ID_Start: L, Nl and Other_ID_Start minus Pattern_Syntax
// and Pattern_White_Space.
func regexIDStart() regexSet {
	p := unicode.Properties
	return regexSetFromTables(unicode.L, unicode.Nl, p["Other_ID_Start"]).
		minus(regexSetFromTables(p["Pattern_Syntax"], p["Pattern_White_Space"]))
}

// regexIDContinue is ID_Continue: ID_Start, Mn, Mc, Nd, Pc and
// Other_ID_Continue minus Pattern_Syntax and Pattern_White_Space.
func regexIDContinue() regexSet {
	p := unicode.Properties
	return regexIDStart().union(regexSetFromTables(unicode.Mn, unicode.Mc, unicode.Nd, unicode.Pc,
		p["Other_ID_Continue"])).minus(regexSetFromTables(p["Pattern_Syntax"], p["Pattern_White_Space"]))
}

// regexIdentifierSets caches ID_Start and ID_Continue for group names.
var regexIdentifierSets = sync.OnceValue(func() [2]regexSet {
	return [2]regexSet{regexIDStart(), regexIDContinue()}
})

// regexMultiUpper lists the BMP characters whose full upper-case mapping
// (SpecialCasing.txt) has more than one character, such as ß → SS. The
// non-unicode canonicalization of ECMA-262 leaves them unchanged.
var regexMultiUpper = regexSet{{0xDF, 0xDF}, {0x149, 0x149}, {0x1F0, 0x1F0}, {0x390, 0x390},
	{0x3B0, 0x3B0}, {0x587, 0x587}, {0x1E96, 0x1E9A}, {0x1F50, 0x1F50}, {0x1F52, 0x1F52},
	{0x1F54, 0x1F54}, {0x1F56, 0x1F56}, {0x1F80, 0x1FAF}, {0x1FB2, 0x1FB4}, {0x1FB6, 0x1FB7},
	{0x1FBC, 0x1FBC}, {0x1FC2, 0x1FC4}, {0x1FC6, 0x1FC7}, {0x1FCC, 0x1FCC}, {0x1FD2, 0x1FD3},
	{0x1FD6, 0x1FD7}, {0x1FE2, 0x1FE4}, {0x1FE6, 0x1FE7}, {0x1FF2, 0x1FF4}, {0x1FF6, 0x1FF7},
	{0x1FFC, 0x1FFC}, {0xFB00, 0xFB06}, {0xFB13, 0xFB17}}

// regexCanonUnits is Canonicalize of ECMA-262 without the u flag for one
// UTF-16 code unit: the full upper-case mapping when it is one code unit,
// except that a non-ASCII character never maps to ASCII.
func regexCanonUnits(c rune) rune {
	if c >= 0xD800 && c <= 0xDFFF || regexMultiUpper.contains(c) {
		return c
	}
	u := unicode.ToUpper(c)
	if u > 0xFFFF || (c >= 128 && u < 128) {
		return c
	}
	return u
}

// regexFold maps characters to a canonical representative of their
// case-insensitive equivalence class: for the u flag the smallest member of
// the simple case folding orbit (same classes as scf of ECMA-262), without
// it the Canonicalize value of a code unit. Only characters whose
// representative differs from themselves are listed.
type regexFold struct {
	bmp    []rune        // representative of every BMP value
	astral map[rune]rune // representatives above U+FFFF that differ
	moved  []regexRange  // sorted runs of characters whose representative differs (for sets)
}

// rep returns the representative of c.
func (f *regexFold) rep(c rune) rune {
	if c <= 0xFFFF {
		return f.bmp[c]
	}
	if r, ok := f.astral[c]; ok {
		return r
	}
	return c
}

// mapSet returns s plus the representatives of its members, so that a
// mapped text character is in the result iff some member of s is
// equivalent to the original character.
func (f *regexFold) mapSet(s regexSet) regexSet {
	var extra []regexRange
	for _, r := range s {
		// the runs of moved characters that overlap r
		i := sort.Search(len(f.moved), func(i int) bool { return f.moved[i].hi >= r.lo })
		for ; i < len(f.moved) && f.moved[i].lo <= r.hi; i++ {
			lo, hi := max(f.moved[i].lo, r.lo), min(f.moved[i].hi, r.hi)
			for c := lo; c <= hi; c++ {
				rc := f.rep(c)
				extra = append(extra, regexRange{rc, rc})
			}
		}
	}
	if len(extra) == 0 {
		return s
	}
	return s.union(regexNormalize(extra))
}

func regexNewFold(unicodeMode bool) *regexFold {
	f := &regexFold{bmp: make([]rune, 0x10000), astral: make(map[rune]rune)}
	var moved []regexRange
	note := func(c, r rune) {
		if r != c {
			moved = append(moved, regexRange{c, c})
		}
	}
	for c := rune(0); c <= 0xFFFF; c++ {
		var r rune
		if unicodeMode {
			r = regexOrbitMin(c)
		} else {
			r = regexCanonUnits(c)
		}
		f.bmp[c] = r
		note(c, r)
	}
	if unicodeMode {
		for _, cr := range unicode.CaseRanges {
			for c := rune(cr.Lo); c <= rune(cr.Hi); c++ {
				if c <= 0xFFFF {
					continue
				}
				if r := regexOrbitMin(c); r != c {
					f.astral[c] = r
					note(c, r)
				}
			}
		}
	}
	f.moved = regexNormalize(moved)
	return f
}

// regexOrbitMin returns the smallest character of the simple case folding
// orbit of c.
func regexOrbitMin(c rune) rune {
	m := c
	for r := unicode.SimpleFold(c); r != c; r = unicode.SimpleFold(r) {
		if r < m {
			m = r
		}
	}
	return m
}

// regexFolds caches the two fold tables (immutable once built).
var regexFolds = sync.OnceValue(func() [2]*regexFold {
	return [2]*regexFold{regexNewFold(false), regexNewFold(true)}
})
