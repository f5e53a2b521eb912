"""The confidence table the package ships (oboyu/search/calibration.json) is what the calibration
build (scripts/calibrate.py) writes, and holds a sound model for every mode the search offers and
every build of the default model. Nothing here fits anything: the table is read, never rewritten."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from oboyu.models.default.build import DEFAULT_MODEL
from oboyu.models.manifest import ONNXRUNTIME, ModelInfo, read_manifest, split_engine
from oboyu.modes import Mode
from oboyu.search import confidence
from oboyu.search.confidence import FEATURES, Evidence, Model, gather, model_for, reference_for

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "oboyu" / "search" / "calibration.json"


@pytest.fixture(scope="module")
def table() -> dict:
    return json.loads(TABLE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def default_key(table: dict) -> str:
    """The default model's entry the table serves (the last fitted build, as words_only is)."""
    default = [key for key in table["models"] if key.split("@")[0] == DEFAULT_MODEL]
    assert default, f"no table for {DEFAULT_MODEL}"
    return default[-1]


def entries(table: dict) -> list[tuple[str, str, dict]]:
    """(model key, mode, entry) of every fitted model, and the words-only entry."""
    fitted = [(key, mode, entry) for key, modes in table["models"].items() for mode, entry in modes.items()]
    return [*fitted, ("words_only", "keyword", table["words_only"])]


def test_the_package_reads_this_file(table: dict) -> None:
    assert confidence._table() == table


def test_the_calibration_build_writes_the_shipped_file_as_it_stands() -> None:
    done = subprocess.run([sys.executable, "-m", "scripts.calibrate", "--check"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("spoil", ["unrounded", "mode missing", "hide missing", "words_only stale", "layout"])
def test_the_check_finds_a_table_the_build_would_not_write(table: dict, tmp_path: Path, spoil: str) -> None:
    spoilt = json.loads(json.dumps(table))
    fitted = next(iter(spoilt["models"].values()))
    if spoil == "unrounded":
        fitted["hybrid"]["weights"][0] += 1e-9
    elif spoil == "mode missing":
        del fitted["vector"]
    elif spoil == "hide missing":
        del fitted["keyword"]["hide"]
    elif spoil == "words_only stale":
        spoilt["words_only"]["bias"] += 1.0
    text = json.dumps(spoilt, indent=2 if spoil == "layout" else 1) + "\n"
    (tmp_path / "calibration.json").write_text(text, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "scripts.calibrate", "--check", str(tmp_path / "calibration.json")],
                          cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 1, done.stdout + done.stderr


def test_every_mode_the_search_offers_has_a_model_of_the_right_shape(table: dict) -> None:
    assert table["models"], "no fitted model"
    for key, modes in table["models"].items():
        assert sorted(modes) == sorted(Mode), key
    for key, mode, entry in entries(table):
        assert entry["features"] == list(FEATURES[mode]), (key, mode)
        assert len(entry["weights"]) == len(entry["features"]), (key, mode)
        assert all(isinstance(w, float) and math.isfinite(w) for w in entry["weights"]), (key, mode)
        assert isinstance(entry["bias"], float) and math.isfinite(entry["bias"]), (key, mode)
        assert 0.0 < entry["threshold"] < 1.0, (key, mode)  # a good-match line that can be crossed both ways
        assert 0.0 < entry["hide"] <= entry["threshold"], (key, mode)  # beside a good match, fewer are left out


def test_words_only_is_the_default_models_keyword_fit(table: dict, default_key: str) -> None:
    assert table["words_only"] == table["models"][default_key]["keyword"]


def test_each_fitted_model_names_one_build_and_its_typical_spread(table: dict) -> None:
    for key in table["models"]:
        assert re.fullmatch(r"[^@+]+@[0-9a-f]{12}", key), key  # id@fingerprint, no engine: one table for both engines
        assert split_engine(key) == (key, ONNXRUNTIME)
        spread = table["reference"][key]
        assert 0.0 < spread["mean"] < 1.0 and 0.0 < spread["std"] < 1.0, key
        assert reference_for(key) == (spread["mean"], spread["std"])


@pytest.mark.parametrize("mode", list(Mode))
def test_every_build_of_the_default_model_on_either_engine_is_judged_by_the_table(table: dict, default_key: str, mode: str) -> None:
    """The default model's fingerprint differs between CPU classes (fp32 calibration's last bits):
    the confidence code accepts any build of a fitted model, on onnxruntime or OpenVINO."""
    key = default_key
    entry = table["models"][key][mode]
    fitted = Model(tuple(entry["features"]), tuple(entry["weights"]), entry["bias"], entry["threshold"], entry["hide"],
                   entry.get("match_line"))
    assert (fitted.match_line is None) == (mode == Mode.KEYWORD)  # a match line where there are vectors
    for model_id in (key, f"{key}+openvino", f"{DEFAULT_MODEL}@000000000000", f"{DEFAULT_MODEL}@000000000000+openvino"):
        assert model_for(model_id, mode) == fitted, model_id


def test_the_default_model_built_here_is_judged_by_the_table(table: dict, model_dir: Path) -> None:
    info = ModelInfo.from_manifest(read_manifest(model_dir))
    assert info.name == DEFAULT_MODEL
    assert confidence._calibrated_as(info.model_id) in table["models"], info.model_id
    assert reference_for(info.model_id) is not None
    assert model_for(info.model_id, Mode.HYBRID).threshold > 0.0  # a weak-match line, not the no-table fallback


@pytest.mark.parametrize("mode", ["hybrid", "vector"])
def test_a_larger_cosine_lead_never_lowers_the_confidence(table: dict, default_key: str, mode: str) -> None:
    """Through the evidence the search computes: the passage's cosine rises over two other
    files' (0.80, 0.79) in an index whose typical cosine is 0.80."""
    key = default_key
    model = model_for(key, mode)
    files = {"a": "a.md", "b": "b.md", "c": "c.md"}
    confidences = []
    for step in range(41):
        cosine = 0.76 + step * 0.005
        evidence = gather({"a": set()}, ["会議"], {"会議": 1.0}, files, vector_pool=[("a", cosine), ("b", 0.80), ("c", 0.79)],
                          spread=(0.80, 0.015, 1000), reference=reference_for(key))["a"]
        confidences.append(model.probability(evidence))
    assert confidences == sorted(confidences), confidences
    assert confidences[-1] > confidences[0]


@pytest.mark.parametrize("mode", list(Mode))
def test_more_evidence_of_the_main_kind_never_lowers_the_confidence(table: dict, default_key: str, mode: str) -> None:
    """The lead over the other files (keyword mode: in BM25), and the query's words held (in
    keyword mode with their rarity), each alone raised from nothing to a clear lead."""
    key = default_key
    model = model_for(key, mode)
    base = Evidence(cosine=0.82, standout=1.0, margin=0.0, keyword_margin=0.0, coverage=0.5, idf_coverage=0.5)
    lead = {"keyword_margin": 1.0} if mode == "keyword" else {"margin": 0.05}  # a clear lead in each unit
    for name, top in [*lead.items(), ("coverage", 1.0)]:
        confidences = []
        for t in (i / 20 * top for i in range(21)):
            # the words held: their share, and their share weighted by rarity, together
            raised = {"coverage": t, "idf_coverage": t} if name == "coverage" else {name: t}
            confidences.append(model.probability(replace(base, **raised)))
        assert confidences == sorted(confidences), (mode, name, confidences)
        assert confidences[-1] > confidences[0], (mode, name)
