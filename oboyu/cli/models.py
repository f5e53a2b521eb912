"""`oboyu models`: the catalogue, installed models, and the conversion pipeline behind pull/convert."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from oboyu.errors import OboyuError


@click.group()
def models() -> None:
    """Embedding models: the curated catalogue, what is installed, and conversion to INT8 ONNX.

    `pull` and `convert` need the conversion extra in oboyu's own environment: in a virtual
    environment, pip install torch==2.13.0 'oboyu[convert]'; installed as a tool, uv tool install
    'oboyu[convert]' --with torch==2.13.0, or pipx inject oboyu torch==2.13.0 transformers
    huggingface_hub safetensors."""


@models.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_models(as_json: bool) -> None:
    """The catalogue and the installed models."""
    from oboyu.models.catalogue import catalogue, installed

    entries, local = catalogue(), installed()
    rows = []
    for entry in entries:
        mine = [m for m in local if m.id == entry["id"]]
        rows.append({"id": entry["id"], "dimensions": entry.get("dimensions"), "licence": entry.get("licence"),
                     "default": bool(entry.get("default")), "installed": [m.folder.name for m in mine],
                     "kind": entry.get("kind", "embedder")})
    known = {e["id"] for e in entries}
    for model in local:
        if model.id not in known:
            rows.append({"id": model.id, "dimensions": model.manifest.get("dimensions"), "licence": None,
                         "default": False, "installed": [model.folder.name], "kind": model.kind})
    if as_json:
        click.echo(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    width = max(len(r["id"]) for r in rows) if rows else 10
    for row in rows:
        mark = "*" if row["default"] else " "
        status = ", ".join(row["installed"]) if row["installed"] else "not installed"
        size = "reranker" if row["kind"] == "reranker" else f"{row['dimensions'] or '?':>5}d"
        click.echo(f"{mark} {row['id']:<{width}}  {size:>8}  {status}")
    click.echo("(* the default model, built from the bundled weights on first use)")


def _conversion_options(func):
    options = [
        click.option("--quantization", type=click.Choice(["dynamic", "static", "none"]), default="dynamic",
                     show_default=True, help="INT8 dynamic (per-channel weights), INT8 static QDQ (calibrated), or fp32."),
        click.option("--calibration", type=click.Path(exists=True, path_type=Path),
                     help="Texts for static quantization: a folder or file of .txt/.md, or .jsonl(.gz) with `text`."),
        click.option("--calibration-method", type=click.Choice(["minmax", "entropy", "percentile"]),
                     default="minmax", show_default=True),
        click.option("--fp16", is_flag=True, help="Also install a float16 variant for GPU providers."),
        click.option("--eval-set", type=click.Path(exists=True, file_okay=False, path_type=Path),
                     help="A folder with docs.jsonl.gz and queries.jsonl: the gate also compares Recall@10."),
        click.option("--min-cosine", type=float, default=0.98, show_default=True,
                     help="The gate: mean cosine of INT8 vectors with fp32's."),
        click.option("--no-optimize", is_flag=True, help="Skip onnxruntime's transformer fusions."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _run_conversion(spec: str, revision: str | None, name: str | None, opts: dict) -> None:
    from oboyu.models.catalogue import catalogue_entry
    from oboyu.models.convert.pipeline import Options, convert

    options = Options(quantization=opts["quantization"], calibration=opts["calibration"],
                      calibration_method=opts["calibration_method"], fp16=opts["fp16"], eval_set=opts["eval_set"],
                      min_cosine=opts["min_cosine"], optimize=not opts["no_optimize"], name=name)
    manifest = convert(spec, revision, options, lambda msg: click.echo(f"oboyu: {msg}", err=True),
                       catalogue_entry=catalogue_entry(spec))
    _print_summary(manifest)


@models.command()
@click.argument("model_id")
@click.option("--revision", help="A branch, tag or commit of the hub repository.")
@_conversion_options
def pull(model_id: str, revision: str | None, **opts) -> None:
    """Fetch MODEL_ID from the Hugging Face hub, convert, validate and install it."""
    _run_conversion(model_id, revision, None, opts)


@models.command("convert")
@click.argument("folder", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--name", help="The installed model's id (default: the folder's name).")
@_conversion_options
def convert_command(folder: Path, name: str | None, **opts) -> None:
    """Convert, validate and install a model from a local FOLDER (a transformers model folder)."""
    _run_conversion(str(folder), None, name, opts)


@models.command()
@click.argument("model_id")
@click.option("--json", "as_json", is_flag=True, help="Print the manifest as JSON.")
def info(model_id: str, as_json: bool) -> None:
    """What MODEL_ID is: the catalogue entry and, when installed, its manifest."""
    from oboyu.models.catalogue import catalogue_entry, find_installed

    entry, model = catalogue_entry(model_id), find_installed(model_id)
    if entry is None and model is None:
        raise OboyuError(f"no model {model_id} in the catalogue or installed; `oboyu models list` shows them")
    if as_json:
        click.echo(json.dumps({"catalogue": entry, "installed": model and (model.manifest | {"path": str(model.folder)})},
                              ensure_ascii=False, indent=2))
        return
    if entry is not None:
        for key in ("id", "architecture", "dimensions", "max_tokens", "pooling", "prefixes", "licence", "size"):
            if key in entry:
                click.echo(f"{key}: {entry[key]}")
    if model is None:
        click.echo(f"not installed: `oboyu models pull {model_id}`")
    else:
        _print_summary(model.manifest | {"path": str(model.folder)})


@models.command()
@click.argument("model_id")
def remove(model_id: str) -> None:
    """Delete the installed model MODEL_ID (every variant of it)."""
    from oboyu.models.catalogue import remove_installed

    for folder in remove_installed(model_id):
        click.echo(f"removed {folder}", err=True)


def _print_summary(manifest: dict) -> None:
    out = sys.stdout
    out.write(f"installed: {manifest['id']} ({manifest.get('precision', '?')}) at {manifest.get('path')}\n")
    size = sum(f["bytes"] for f in manifest.get("files", {}).values())
    if manifest.get("kind") == "reranker":
        out.write(f"  {manifest.get('architecture', '')}; a reranker (cross-encoder), max {manifest['max_tokens']} "
                  f"tokens, {size / 1e6:.1f} MB\n")
    else:
        out.write(f"  {manifest.get('architecture', '')}; {manifest['dimensions']} dimensions, "
                  f"max {manifest['max_tokens']} tokens, {manifest.get('pooling', 'mean')} pooling, {size / 1e6:.1f} MB\n")
        prefixes = manifest.get("prefixes", {})
        out.write(f"  prefixes: query {prefixes.get('query', '')!r}, passage {prefixes.get('passage', '')!r}\n")
    fusions = (manifest.get("optimization") or {}).get("fusions")
    if fusions:
        out.write("  fusions: " + ", ".join(f"{op} ×{n}" for op, n in fusions.items()) + "\n")
    validation = manifest.get("validation") or manifest.get("fidelity")
    if validation and "score_correlation" in validation:
        retrieval = validation["retrieval"]
        line = (f"  validation: score correlation {validation['score_correlation']:.4f}, "
                f"top-1 agreement {retrieval['top1_agreement']:.3f}")
        if "accuracy_at_1" in retrieval:
            line += f", accuracy@1 {retrieval['accuracy_at_1']:.3f} (fp32 {retrieval['accuracy_at_1_fp32']:.3f})"
        out.write(line + "\n")
    elif validation:
        line = f"  validation: mean cosine {validation['mean_cosine']:.4f} (min {validation['min_cosine']:.4f})"
        retrieval = validation.get("retrieval") or {}
        if retrieval:
            line += f", top-1 agreement {retrieval['top1_agreement']:.3f}, top-10 overlap {retrieval['top10_overlap']:.3f}"
        if "recall_at_10" in retrieval:
            line += f", Recall@10 {retrieval['recall_at_10']:.3f} (fp32 {retrieval['recall_at_10_fp32']:.3f})"
        out.write(line + "\n")
