// node_eval.js evaluates the regex_test corpus with V8 and prints one JSON
// result per case, in corpus order, for regex_test_diff_test.go:
//
//   node testdata/regex/node_eval.js testdata/regex/corpus.json
//
// For each case it does what RegexTest documents: without the g flag one
// exec() from lastIndex 0; with g the loop of String.prototype.match
// (after an empty match lastIndex moves on by AdvanceStringIndex). A lone
// surrogate in a returned string is written as <lone:xxxx> so that Go can
// compare it (encoding/json turns \uD83D escapes into U+FFFD).
'use strict';
const fs = require('fs');

const corpus = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const lone = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
const norm = (s) => (s === undefined ? null : s.replace(lone, (m) => `<lone:${m.charCodeAt(0).toString(16)}>`));

function advance(s, i, unicode) {
  if (!unicode || i + 1 >= s.length) return i + 1;
  const c = s.charCodeAt(i);
  if (c < 0xd800 || c > 0xdbff) return i + 1;
  const d = s.charCodeAt(i + 1);
  return d >= 0xdc00 && d <= 0xdfff ? i + 2 : i + 1;
}

function detail(m, re) {
  const d = { index: m.index, match: norm(m[0]), groups: [] };
  for (let k = 1; k < m.length; k++) d.groups.push(norm(m[k]));
  if (m.groups) {
    d.namedGroups = {};
    for (const [k, v] of Object.entries(m.groups)) d.namedGroups[k] = norm(v);
  }
  if (re.hasIndices) d.indices = Array.from(m.indices, (p) => (p === undefined ? null : [p[0], p[1]]));
  return d;
}

function evaluate(c) {
  let re;
  try {
    re = new RegExp(c.pattern, c.flags || '');
  } catch (e) {
    return { error: true, message: String(e.message) };
  }
  const details = [];
  if (!re.global) {
    re.lastIndex = 0;
    const m = re.exec(c.text);
    if (m) details.push(detail(m, re));
  } else {
    re.lastIndex = 0;
    for (;;) {
      const m = re.exec(c.text);
      if (!m) break;
      details.push(detail(m, re));
      if (details.length > 10000) break;
      if (m[0] === '') re.lastIndex = advance(c.text, re.lastIndex, re.unicode);
    }
  }
  return { error: false, matched: details.length > 0, matches: details.map((d) => d.match), details };
}

process.stdout.write(JSON.stringify(corpus.cases.map(evaluate)) + '\n');
