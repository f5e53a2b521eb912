"""The conversion pipeline: any supported BERT-family encoder to a validated INT8 ONNX model.

Steps, one module each: `source` (fetch), `tokenizer_files`, `export` (PyTorch -> ONNX),
`optimize`, `quantize`, `validate`; `pipeline.convert()` runs them and installs through
`oboyu.models.install`. Needs the `convert` extra (torch, transformers); query time never imports it.
"""
