#!/usr/bin/env bash
# The answer figures of docs/evaluation.md: `eval answers` runs, resumable (every answer is
# kept in the cache file; a rerun reads only what is missing), one report per reader, set
# and budget list in bench/results/.
#
#   bench/answers.sh qwen heldout     # Qwen2.5-1.5B at 1024 on the two held-out sets
#   bench/answers.sh qwen dev 1024    # ... on the two dev sets at the budgets given
#   bench/answers.sh smollm2 dev 512,1024,2048
#
# Qwen comes from `make reader-models`; SmolLM2 from `make venv` (its answers are cut at
# 128 tokens: it loops to the limit otherwise). The sets are those of bench/data/eval/, each
# question with the ten pages it was measured on, unpacked from the repository's archive
# (bench/eval_data.py). CACHE moves the cache file (default
# ~/.cache/htmlrag-chat/answers-READER.sqlite3).
set -euo pipefail
cd "$(dirname "$0")/.."
reader=$1 sets=$2 budgets=${3:-1024}
cache=${CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/htmlrag-chat/answers-$reader.sqlite3}
mkdir -p "$(dirname "$cache")"
case $reader in
  qwen) model=$(.venv/bin/python -c 'from htmlrag_chat.reader.choice import models_folder; print(models_folder() / "Qwen2.5-Coder-1.5B-Instruct-Q4.gguf")')
        more=() ;;
  smollm2) model=$(.venv/bin/python -c 'import sys; sys.path.insert(0, "."); from tests.smollm2 import smollm2_gguf; print(smollm2_gguf())')
        more=(--max-tokens 128) ;;
  *) echo "reader: qwen or smollm2" >&2; exit 2 ;;
esac
case $sets in
  heldout) datasets=(bench/data/eval/qa_en_holdout.jsonl bench/data/eval/qa_lang_holdout.jsonl)
           methods=default,chunk-bm25 ;;
  dev) datasets=(bench/data/eval/qa.jsonl bench/data/eval/qa_lang.jsonl)
       methods=default,chunk-bm25,plain ;;
  *) echo "sets: heldout or dev" >&2; exit 2 ;;
esac
test -d bench/data/corpus/pages || .venv/bin/python bench/eval_data.py
# llama.cpp without its extra buffer types, whose AMX path crashed (reader/llama_cpp_chat.py)
export HTMLRAG_CHAT_LLAMA_EXTRA_BUFFERS=${HTMLRAG_CHAT_LLAMA_EXTRA_BUFFERS:-0}
for dataset in "${datasets[@]}"; do
  name=$(basename "$dataset" .jsonl)
  out=bench/results/answers_${reader}_${name}_${budgets//,/-}
  .venv/bin/htmlrag-chat --cache "$cache" eval answers "$dataset" --pages-dir bench/data/corpus \
    --reader local --model "$model" "${more[@]}" --methods "$methods" --render html,markdown \
    --budget "$budgets" --progress --out "$out.json.gz" > "$out.md"
done
