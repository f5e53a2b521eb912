"""Nothing leaves the machine: embedding writes nothing outside oboyu's own directories."""

import subprocess
import sys
from pathlib import Path


def test_embedding_writes_nothing_to_home(tmp_path: Path, model_dir: Path) -> None:
    """Queries (onnxruntime) and passages (OpenVINO where it is the engine), with the engine's
    first-use probe: nothing in $HOME, and OpenVINO's telemetry never loaded."""
    home = tmp_path / "home"
    home.mkdir()
    code = (
        "from pathlib import Path; import sys\n"
        "from oboyu.models.embedding import Embedder\n"
        "embedder = Embedder(Path(sys.argv[1]))\n"
        "embedder.embed([embedder.passage_text('議事録は翌日までに共有する')])\n"
        "assert 'openvino_telemetry' not in sys.modules\n"
        "print(embedder.embed_queries(['会議の議事録']).shape)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(model_dir)],
        env={"HOME": str(home), "PATH": "/usr/bin:/bin", "TMPDIR": str(home), "OBOYU_CACHE_DIR": str(tmp_path / "cache")},
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "(1, 384)"
    # onnxruntime's telemetry would leave ~/.cache/Microsoft/... and ~/.ses here, OpenVINO's ~/intel/...
    assert sorted(p.relative_to(home).as_posix() for p in home.rglob("*")) == []
