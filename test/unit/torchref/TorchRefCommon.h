//===- TorchRefCommon.h - shared by the PyTorch reference tests -*- C++ -*-===//
//
// Loading the fixtures of test/fixtures/torch and importing gpt-ref.lcc, in
// f32 as the DSL produces it or retyped to f64.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_TEST_UNIT_TORCHREF_TORCHREFCOMMON_H
#define LCC_TEST_UNIT_TORCHREF_TORCHREFCOMMON_H

#include "runtime/support/HostTensor.h"
#include "runtime/support/Safetensors.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace lcc::torchref {

/// One context for the whole test program, with every dialect the pipeline needs.
mlir::MLIRContext &context();

/// test/fixtures/torch/<name> (a gtest failure when it cannot be read).
SafetensorsFile loadFixture(const std::string &name);

/// gpt-ref.lcc imported by the DSL frontend; with `f64`, every f32 tensor
/// type becomes f64 (the DSL only produces f32).
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>> importRefModel(bool f64);

/// The same values as f64.
HostTensor widen(const HostTensor &t);

} // namespace lcc::torchref

#endif
