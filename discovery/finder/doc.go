// Package finder is the search engine behind discovery's finder and
// router: an Index ranks documents (one per paid tool: key, name,
// description, tags, input field names and synonyms in several languages)
// for a need written in plain words, with tokenisation, Snowball
// stemming, BM25F field weights, phrase bonuses, compound splitting and
// typo tolerance, scoring down the words of a need a document does not
// explain (see Index).
//
// The finder's vocabulary is its own data: the synonyms people write for
// each tool, by language (Synonyms, keyed by the tool's catalog key), and
// the classes of interchangeable words of the trade and of programming
// (findWordClasses). DocsFromTools joins them to the catalog's tools.
package finder
