// Reference ids from Hugging Face's own tokenizers library (its Node binding), for the parity test of
// text/tokenizer (tests/text/tokenizer_parity_test.cpp).
// usage: node tokenize_reference.js TOKENIZER_JSON CORPUS_JSON OUT_JSON
//   CORPUS_JSON: a JSON array of strings; OUT_JSON: a JSON array of id arrays, one per string.
const fs = require("fs");
const { Tokenizer } = require("tokenizers");

async function main() {
  const [tokenizerPath, corpusPath, outPath] = process.argv.slice(2);
  if (!outPath) {
    console.error("usage: node tokenize_reference.js TOKENIZER_JSON CORPUS_JSON OUT_JSON");
    process.exit(2);
  }
  const tokenizer = Tokenizer.fromFile(tokenizerPath);
  const corpus = JSON.parse(fs.readFileSync(corpusPath, "utf8"));
  const out = [];
  for (const text of corpus) {
    const e = await tokenizer.encode(text, null, { addSpecialTokens: false });
    out.push(Array.from(e.getIds()));
  }
  fs.writeFileSync(outPath, JSON.stringify(out));
}

main().catch((e) => {
  console.error(`tokenize_reference: ${e.message}`);
  process.exit(1);
});
