"""Host-side helpers for kernels (Triton's `triton.tools`): `tensor_descriptor.TensorDescriptor`."""
