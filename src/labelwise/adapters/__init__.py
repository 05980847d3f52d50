"""Adapters that turn a trained model into the NumPy arrays the core of labelwise works on.

The core library needs only NumPy. Each adapter lives in its own submodule and imports its
framework lazily, inside the functions, so importing ``labelwise`` never pulls in a deep
learning framework:

* :mod:`labelwise.adapters.torch` - PyTorch ``nn.Module`` and TorchScript files
  (``pip install 'labelwise[torch]'``): :func:`~labelwise.adapters.torch.capture` runs the
  model once over the inputs and returns the hidden-layer activations and the softmax
  probabilities (or raw outputs) as a :class:`~labelwise.adapters.torch.Capture`. It also
  loads models as people save them: TorchScript with any ``forward``, pickled modules,
  ``torch.export`` ``.pt2`` files and ``state_dict`` checkpoints with their class.
* :mod:`labelwise.adapters.onnx` - ``.onnx`` files run with ONNX Runtime
  (``pip install 'labelwise[onnx]'``): the same ``capture``, the hidden tensor added as an
  extra graph output.

Both write large captures batch by batch (``capture(..., out=DIR)``) and accept any pile with
``shape`` and slicing (:mod:`labelwise.adapters._capture`, which imports no framework).
"""
