#include "tools/capture/launches.hpp"
#include "tools/capture/stream_capture.hpp"

#include <cupti_activity.h>

#include <functional>

namespace atomsim::capture {
namespace {

// The runtime may launch through a library kernel handle rather than a
// context's function; either answers the attribute.
int function_attribute(CUfunction f, CUfunction_attribute a) {
  int v = 0;
  if (cuFuncGetAttribute(&v, a, f) == CUDA_SUCCESS) return v;
  CUdevice dev = 0;
  if (cuCtxGetDevice(&dev) == CUDA_SUCCESS && cuKernelGetAttribute(&v, a, reinterpret_cast<CUkernel>(f), dev) == CUDA_SUCCESS)
    return v;
  return -1;
}

void describe_function(LaunchInfo& info) {
  if (!info.function) return;
  info.registers = function_attribute(info.function, CU_FUNC_ATTRIBUTE_NUM_REGS);
  info.static_shared_bytes = function_attribute(info.function, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
}

void apply_attributes(LaunchInfo& info, const CUlaunchAttribute* attrs, unsigned count) {
  for (unsigned i = 0; i < count; ++i) {
    if (attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
      info.cluster = {attrs[i].value.clusterDim.x, attrs[i].value.clusterDim.y, attrs[i].value.clusterDim.z};
    if (attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE) info.cooperative = attrs[i].value.cooperative != 0;
  }
}

// cuLaunchKernel's and cuLaunchCooperativeKernel's parameters, which name the
// same fields; returns the stream.
template <class Params>
CUstream take_launch(LaunchInfo& info, const Params* p) {
  info.function = p->f;
  info.grid = {p->gridDimX, p->gridDimY, p->gridDimZ};
  info.block = {p->blockDimX, p->blockDimY, p->blockDimZ};
  info.dynamic_shared_bytes = p->sharedMemBytes;
  return p->hStream;
}

LaunchInfo kernel_node(CUgraphNode node, std::uint32_t graph_id) {
  CUDA_KERNEL_NODE_PARAMS p{};
  if (cuGraphKernelNodeGetParams(node, &p) != CUDA_SUCCESS)
    throw CaptureError("cannot read a kernel node's parameters from an instantiated CUDA graph");
  LaunchInfo info;
  info.function = p.func;
  if (!info.function && p.kern) cuKernelGetFunction(&info.function, p.kern);
  const char* name = nullptr;
  if (info.function && cuFuncGetName(&name, info.function) != CUDA_SUCCESS) name = nullptr;
  if (!name && p.kern && cuKernelGetName(&name, p.kern) != CUDA_SUCCESS) name = nullptr;
  info.mangled = name ? name : "";
  info.name = demangle(name);
  info.grid = {p.gridDimX, p.gridDimY, p.gridDimZ};
  info.block = {p.blockDimX, p.blockDimY, p.blockDimZ};
  info.dynamic_shared_bytes = p.sharedMemBytes;
  CUlaunchAttributeValue value{};
  if (cuGraphKernelNodeGetAttribute(node, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &value) == CUDA_SUCCESS)
    info.cluster = {value.clusterDim.x, value.clusterDim.y, value.clusterDim.z};
  if (cuGraphKernelNodeGetAttribute(node, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &value) == CUDA_SUCCESS)
    info.cooperative = value.cooperative != 0;
  describe_function(info);
  GraphNodeInfo g;
  g.graph_id = graph_id;
  cuptiGetGraphNodeId(node, &g.node_id);
  info.graph = g;
  info.api = "cuGraphLaunch";
  return info;
}

void collect_kernels(CUgraph graph, std::vector<LaunchInfo>& out, std::uint32_t graph_id) {
  std::size_t count = 0;
  if (cuGraphGetNodes(graph, nullptr, &count) != CUDA_SUCCESS)
    throw CaptureError("cannot list the nodes of an instantiated CUDA graph");
  std::vector<CUgraphNode> nodes(count);
  if (count && cuGraphGetNodes(graph, nodes.data(), &count) != CUDA_SUCCESS)
    throw CaptureError("cannot list the nodes of an instantiated CUDA graph");
  for (CUgraphNode node : nodes) {
    CUgraphNodeType type{};
    if (cuGraphNodeGetType(node, &type) != CUDA_SUCCESS) continue;
    if (type == CU_GRAPH_NODE_TYPE_KERNEL) out.push_back(kernel_node(node, graph_id));
    CUgraph child = nullptr;
    if (type == CU_GRAPH_NODE_TYPE_GRAPH && cuGraphChildGraphNodeGetGraph(node, &child) == CUDA_SUCCESS)
      collect_kernels(child, out, graph_id);
  }
}

}  // namespace

void refuse_shared_graph_function(const LaunchInfo& launch, const char* what) {
  if (!launch.graph || launch.graph->same_function < 2) return;
  throw CaptureError("launch " + std::to_string(launch.ordinal) + " (" + launch.name + ") is one of " +
                     std::to_string(launch.graph->same_function) + " nodes of one CUDA graph that run this kernel; " +
                     what + " of a graph's launch cannot be told apart by node");
}

const std::vector<CUpti_CallbackId>& launch_callbacks() {
  static const std::vector<CUpti_CallbackId> ids{
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,          CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,           CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz};
  return ids;
}

void GraphKernels::instantiated(CUgraph graph, CUgraphExec exec) {
  std::uint32_t graph_id = 0;
  cuptiGetGraphId(graph, &graph_id);
  std::vector<LaunchInfo> kernels;
  collect_kernels(graph, kernels, graph_id);
  std::map<std::string, std::uint32_t> per_function;
  for (const LaunchInfo& k : kernels) ++per_function[k.mangled];
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    kernels[i].graph->kernel_index = static_cast<std::uint32_t>(i);
    kernels[i].graph->kernels = static_cast<std::uint32_t>(kernels.size());
    kernels[i].graph->same_function = per_function[kernels[i].mangled];
  }
  execs_[exec] = std::move(kernels);
}

const std::vector<LaunchInfo>& GraphKernels::kernels_of(CUgraphExec exec) const {
  static const std::vector<LaunchInfo> none;
  auto it = execs_.find(exec);
  return it == execs_.end() ? none : it->second;
}

std::vector<LaunchInfo> decode_launches(CUpti_CallbackId cbid, const CUpti_CallbackData* cb, const GraphKernels& graphs) {
  LaunchInfo info;
  info.api = cb->functionName ? cb->functionName : "";
  info.context = cb->context;
  info.correlation_id = cb->correlationId;
  info.mangled = cb->symbolName ? cb->symbolName : "";
  info.name = demangle(cb->symbolName);
  CUstream stream = nullptr;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
      stream = take_launch(info, static_cast<const cuLaunchKernel_params*>(cb->functionParams));
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
      stream = take_launch(info, static_cast<const cuLaunchCooperativeKernel_params*>(cb->functionParams));
      info.cooperative = true;
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
      auto* p = static_cast<const cuLaunchKernelEx_params*>(cb->functionParams);
      info.function = p->f;
      info.grid = {p->config->gridDimX, p->config->gridDimY, p->config->gridDimZ};
      info.block = {p->config->blockDimX, p->config->blockDimY, p->config->blockDimZ};
      info.dynamic_shared_bytes = p->config->sharedMemBytes;
      apply_attributes(info, p->config->attrs, p->config->numAttrs);
      stream = p->config->hStream;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz: {
      auto* p = static_cast<const cuGraphLaunch_params*>(cb->functionParams);
      if (stream_is_capturing(p->hStream)) return {};
      std::vector<LaunchInfo> kernels = graphs.kernels_of(p->hGraph);
      for (LaunchInfo& k : kernels) {
        k.context = cb->context;
        k.correlation_id = cb->correlationId;
      }
      return kernels;
    }
    default: return {};
  }
  if (stream_is_capturing(stream)) return {};
  describe_function(info);
  return {info};
}

}  // namespace atomsim::capture
