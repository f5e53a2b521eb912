"""Step 3: onnxruntime's transformer optimizer (attention, layer-norm and GELU fusions, the
residual's Add kept apart from its LayerNorm), with the operator counts before and after so that
the report says which fusions were applied."""

from __future__ import annotations

import contextlib
import io
import time
from collections import Counter
from pathlib import Path

from oboyu.models.convert.source import SourceModel

FUSED_OPS = ("Attention", "MultiHeadAttention", "EmbedLayerNormalization", "SkipLayerNormalization",
             "SkipSimplifiedLayerNormalization", "BiasGelu", "FastGelu", "Gelu", "LayerNormalization")


def operator_counts(path: Path) -> dict[str, int]:
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    return dict(sorted(Counter(node.op_type for node in model.graph.node).items()))


def optimize(source: SourceModel, fp32: Path, out: Path) -> dict:
    """Write the optimized model to `out`; report fusions (fused op -> count) and op counts."""
    from onnxruntime.transformers.fusion_options import FusionOptions
    from onnxruntime.transformers.optimizer import optimize_model

    started = time.perf_counter()
    before = operator_counts(fp32)
    options = FusionOptions("bert")
    # the residual's Add and LayerNormalization stay apart, as oboyu's CPU sessions keep them
    # (providers.CPU_DISABLED_OPTIMIZERS): SkipLayerNormalization's kernel was the slower
    options.enable_skip_layer_norm = False
    # the optimizer's BERT patterns cover BERT and XLM-R; for others it fuses what it recognises
    with contextlib.redirect_stdout(io.StringIO()):
        model = optimize_model(str(fp32), model_type="bert", num_heads=source.heads, hidden_size=source.hidden,
                               opt_level=1, use_gpu=False, optimization_options=options)
        model.save_model_to_file(str(out))
    after = operator_counts(out)
    fusions = {op: after[op] for op in FUSED_OPS if after.get(op, 0) > before.get(op, 0)}
    return {
        "seconds": round(time.perf_counter() - started, 2),
        "fusions": fusions,
        "nodes_before": sum(before.values()),
        "nodes_after": sum(after.values()),
        "operators_before": before,
        "operators_after": after,
    }
