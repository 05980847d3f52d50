"""Adapters that turn a trained model into the NumPy arrays the core of labelwise works on.

The core library needs only NumPy. Each adapter lives in its own submodule and imports its
framework lazily, inside the functions, so importing ``labelwise`` never pulls in a deep
learning framework:

* :mod:`labelwise.adapters.torch` - PyTorch ``nn.Module`` and TorchScript files
  (``pip install 'labelwise[torch]'``): :func:`~labelwise.adapters.torch.capture` runs the
  model once over the inputs and returns the hidden-layer activations and the softmax
  probabilities (or raw outputs) as a :class:`~labelwise.adapters.torch.Capture`.
"""
