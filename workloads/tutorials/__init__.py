"""Kernels in the style of Triton's tutorials 01-09, written for this project in Triton's own dialect (`import
triton`, `import triton.language as tl`): each file loads under our compiler through
compiler.triton_compat.load_kernel_file (and, unchanged, under Triton). Host wrappers take the inputs and
preallocated outputs (NumPy arrays for our interpreter, torch CUDA tensors on the GPU) and launch.
tests/tutorials/ runs them in the interpreter and through ptxas, and on the GPU; scripts/bench_tutorials.py times
matmul, attention, persistent matmul and layernorm beside Triton."""
