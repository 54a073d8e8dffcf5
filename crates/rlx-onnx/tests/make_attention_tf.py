"""Writes tests/data/attn_tf.onnx: Keras `MultiHeadAttention` (self
attention, a padding mask) converted by tf2onnx, opset 17. Needs a Python
with tensorflow and tf2onnx (their numpy pin differs from torch's: use a
separate virtual environment); then record onnxruntime's outputs with
`python3 tests/make_attention_exports.py --record attn_tf`.
"""

import os

import onnx
import tensorflow as tf
import tf2onnx

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
B, S, E, H = 2, 8, 16, 4

tf.keras.utils.set_random_seed(0)
layer = tf.keras.layers.MultiHeadAttention(num_heads=H, key_dim=E // H)
spec = (tf.TensorSpec((B, S, E), tf.float32, name="x"), tf.TensorSpec((B, S), tf.int64, name="attention_mask"))


@tf.function(input_signature=spec)
def attend(x, mask):
    # Keras wants the mask as [batch, query, key] booleans.
    keep = tf.cast(mask[:, None, :], tf.bool) & tf.ones((1, S, 1), tf.bool)
    return layer(x, x, attention_mask=keep)


attend(tf.zeros((B, S, E)), tf.ones((B, S), tf.int64))  # builds the layer's weights
path = os.path.join(HERE, "attn_tf.onnx")
model, _ = tf2onnx.convert.from_function(attend, input_signature=spec, opset=17)
# tf2onnx names the output after the TF op (`Identity:0`); call it `y` as
# the torch exports do.
old = model.graph.output[0].name
for node in model.graph.node:
    node.output[:] = ["y" if o == old else o for o in node.output]
model.graph.output[0].name = "y"
onnx.save(model, path)
print(f"wrote {path} ({os.path.getsize(path)} bytes)")
