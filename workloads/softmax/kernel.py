"""Row-wise softmax in the classic Triton-tutorial form: one program per row, the whole row in one block
(BLOCK_SIZE = next_power_of_2(n_cols)), fp32 math, output in the input's dtype. Only the two imports differ
from Triton (workloads._common.triton_module rewrites them to compare against Triton 3.6)."""
import compiler
import compiler.language as tl


@compiler.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row_idx = tl.program_id(0)
    row_start_ptr = input_ptr + row_idx * input_row_stride
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols
    row = tl.load(row_start_ptr + col_offsets, mask=mask, other=-float("inf")).to(tl.float32)
    row_minus_max = row - tl.max(row, axis=0)
    numerator = tl.exp(row_minus_max)
    denominator = tl.sum(numerator, axis=0)
    softmax_output = numerator / denominator
    output_row_start_ptr = output_ptr + row_idx * output_row_stride
    tl.store(output_row_start_ptr + col_offsets, softmax_output.to(output_ptr.dtype.element_ty), mask=mask)
