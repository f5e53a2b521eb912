"""The conversion pipeline: any supported BERT-family encoder to a validated INT8 ONNX model.

Steps, one module each: `source` (fetch), `tokenizer_files`, `export` (PyTorch -> ONNX),
`optimize`, `quantize`, `validate`, `install`; `pipeline.convert()` runs them all. Needs the
`convert` extra (torch, transformers) for the export; index and query time never import this.
"""
