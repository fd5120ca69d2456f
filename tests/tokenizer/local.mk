# tests/tokenizer/ — tests of runner/tokenizer (owned with the tokenizer).
