// Launches recorded into a graph by stream capture run nothing then: their
// kernels run, and are counted, when the graph is launched. Shared by the
// CUPTI passes and the Sanitizer's trace pass.
#pragma once

#include <cuda.h>

namespace atomsim::capture {

inline bool stream_is_capturing(CUstream stream) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  return cuStreamIsCapturing(stream, &status) == CUDA_SUCCESS && status != CU_STREAM_CAPTURE_STATUS_NONE;
}

}  // namespace atomsim::capture
