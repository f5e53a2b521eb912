#!/bin/bash
# `oboyu index` end to end on an NVIDIA GPU against the same machine's CPU: 400 Markdown files made
# from TEXTS (`python -m benchmarks.hardware.cuda texts TEXTS --count 4000`, where ../shared is),
# indexed from scratch (a new index and embedding cache each run) on the platform's choice (CUDA,
# where onnxruntime-gpu is installed) and with --provider cpu, twice each after a warm-up that
# builds the model and its GPU graph; each run's top three files for one question are printed, to
# compare. Run from the repository's root on the GPU machine:
#     bash benchmarks/hardware/cuda_index.sh TEXTS
set -euo pipefail
texts=${1:?usage: cuda_index.sh TEXTS}
docs=$(mktemp -d)
python3 - "$texts" "$docs" <<'PY'
import gzip, json, pathlib, sys
texts = [json.loads(line)["text"] for line in gzip.open(sys.argv[1], "rt", encoding="utf-8")]
root = pathlib.Path(sys.argv[2])
for i in range(0, len(texts), 10):
    (root / f"page-{i // 10:04d}.md").write_text(f"# ページ {i // 10}\n\n" + "\n\n".join(texts[i:i + 10]) + "\n", encoding="utf-8")
print(len(texts), "passages in", len(list(root.iterdir())), "files")
PY
run() {  # a label, then oboyu's global options
  local d
  d=$(mktemp -d)
  local t0 t1
  t0=$(date +%s.%N)
  OBOYU_DB=$d/i.duckdb OBOYU_EMBEDDING_CACHE=$d/e.sqlite3 python3 -m oboyu.cli "${@:2}" index "$docs" 2> "$d/err" || { cat "$d/err"; return 1; }
  t1=$(date +%s.%N)
  echo "$1: $(python3 -c "print(round($t1 - $t0, 2))") s wall; $(tail -1 "$d/err")"
  OBOYU_DB=$d/i.duckdb python3 -m oboyu.cli "${@:2}" query "ファイルのアクセス権を変更する" --json -k 3 2>/dev/null |
    python3 -c "import json, sys; print('   top 3:', [r['path'].rsplit('/', 1)[-1] for r in json.load(sys.stdin)])"
}
run "warm-up (model and GPU graph built)"
run "GPU (the platform's choice), 1"
run "CPU (--provider cpu), 1" --provider cpu
run "GPU (the platform's choice), 2"
run "CPU (--provider cpu), 2" --provider cpu
