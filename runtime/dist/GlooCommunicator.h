//===- GlooCommunicator.h - the CPU backend ----------------------*- C++ -*-===//
//
// The factory of the "gloo" backend (runtime/dist/GlooCommunicator.cpp says
// how its collectives work). Separate from Communicator.h so that only the
// dispatch in createWorld knows which backends exist in this build.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_DIST_GLOOCOMMUNICATOR_H
#define LCC_RUNTIME_DIST_GLOOCOMMUNICATOR_H

#include "runtime/dist/Communicator.h"

namespace lcc {
namespace dist {

/// Whether this build has Gloo (else createGlooWorld reports "built without
/// Gloo" for worlds of more than one rank).
bool haveGloo();
/// The world over Gloo's TCP transport; see createWorld.
Status createGlooWorld(const DistEnv &env, std::unique_ptr<Communicator> &world);

} // namespace dist
} // namespace lcc

#endif
