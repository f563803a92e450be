//===- NcclCommunicator.h - the GPU backend ----------------------*- C++ -*-===//
//
// The factory of the "nccl" backend (runtime/dist/NcclCommunicator.cpp).
// Buffers are CUDA device memory of the device this process selects:
// LOCAL_RANK's, or device 0 when only one is visible (one GPU per process
// through CUDA_VISIBLE_DEVICES). Builds without NCCL keep the same API and
// report "built without NCCL".
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_DIST_NCCLCOMMUNICATOR_H
#define LCC_RUNTIME_DIST_NCCLCOMMUNICATOR_H

#include "runtime/dist/Communicator.h"

namespace lcc {
namespace dist {

/// Whether this build has NCCL (and the CUDA runtime).
bool haveNccl();
/// Selects this process's CUDA device and connects the world with NCCL;
/// without a usable CUDA device, an error saying so.
Status createNcclWorld(const DistEnv &env, std::unique_ptr<Communicator> &world);

} // namespace dist
} // namespace lcc

#endif
