//===- CallAnalysisTest.cpp - lcc's aliasing answers against upstream's ---===//
//
// passes/buffer/CallAnalysis.h answers "which operands does this result
// alias" for func.call and scf.for from one callee lookup / the result's own
// init. The oracle is upstream's default answer, built by asking every
// operand which results it aliases: after a one-shot module analysis, both
// must give the same operands, relations and definiteness, in the same order,
// for every result of every call and loop.
//
//===----------------------------------------------------------------------===//
#include "passes/buffer/CallAnalysis.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotModuleBufferize.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::bufferization;

namespace {

// Callees returning an argument, another, both, a new tensor, or an argument
// they write; callers passing one value twice, loops carrying several values
// (passed on, updated, swapped), and a loop around calls.
const char *kModule = R"mlir(
func.func private @second(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  return %b : tensor<4xf32>
}
func.func private @both(%a: tensor<4xf32>, %b: tensor<4xf32>, %f: f32)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %i = arith.constant 0 : index
  %w = tensor.insert %f into %a[%i] : tensor<4xf32>
  %n = tensor.empty() : tensor<4xf32>
  %m = tensor.insert %f into %n[%i] : tensor<4xf32>
  return %b, %w, %m : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
func.func private @select(%c: i1, %a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %r = arith.select %c, %a, %b : tensor<4xf32>
  return %r : tensor<4xf32>
}
func.func @calls(%s: tensor<4xf32>, %t: tensor<4xf32>, %c: i1, %f: f32)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, f32) {
  %i = arith.constant 0 : index
  %v = call @second(%s, %t) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %u = tensor.insert %f into %v[%i] : tensor<4xf32>
  %r:3 = call @both(%t, %s, %f) : (tensor<4xf32>, tensor<4xf32>, f32)
      -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  %x = tensor.extract %t[%i] : tensor<4xf32>
  %y = call @select(%c, %s, %s) : (i1, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %u, %r#0, %r#1, %r#2, %y, %x
      : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, f32
}
func.func @loops(%s: tensor<4xf32>, %t: tensor<4xf32>, %f: f32)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, f32) {
  %i = arith.constant 0 : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %e = tensor.empty() : tensor<4xf32>
  %r:3 = scf.for %k = %c0 to %c4 step %c1 iter_args(%a = %s, %b = %t, %d = %e)
      -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
    %a2 = tensor.insert %f into %a[%i] : tensor<4xf32>
    %d2 = func.call @second(%b, %d) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    scf.yield %a2, %b, %d2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
  %w:2 = scf.for %k = %c0 to %c4 step %c1 iter_args(%a = %r#0, %b = %r#1)
      -> (tensor<4xf32>, tensor<4xf32>) {
    scf.yield %b, %a : tensor<4xf32>, tensor<4xf32>
  }
  %x = tensor.extract %t[%i] : tensor<4xf32>
  return %r#2, %w#0, %w#1, %r#0, %x
      : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, f32
}
)mlir";

TEST(CallAnalysis, AliasingOperandsAsUpstreamDefault) {
  DialectRegistry registry;
  registry.insert<arith::ArithDialect, BufferizationDialect, func::FuncDialect, scf::SCFDialect,
                  tensor::TensorDialect>();
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  func_ext::registerBufferizableOpInterfaceExternalModels(registry);
  scf::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
  lcc::registerCallAnalysis(registry); // after upstream's: it patches their models
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kModule, &context);
  ASSERT_TRUE(module);

  OneShotBufferizationOptions options;
  options.bufferizeFunctionBoundaries = true;
  options.allowReturnAllocsFromLoops = true; // the swapping loop yields other buffers
  OneShotAnalysisState state(*module, options);
  ASSERT_TRUE(succeeded(analyzeModuleOp(*module, state)));

  int compared = 0, aliased = 0;
  module->walk([&](Operation *op) {
    if (!llvm::isa<func::CallOp, scf::ForOp>(op))
      return;
    for (OpResult result : op->getResults()) {
      if (!llvm::isa<TensorType>(result.getType()))
        continue;
      SCOPED_TRACE(op->getName().getStringRef().str() + " result " +
                   std::to_string(result.getResultNumber()));
      AliasingOpOperandList ours = state.getAliasingOpOperands(result);
      AliasingOpOperandList oracle =
          bufferization::detail::defaultGetAliasingOpOperands(result, state);
      ASSERT_EQ(ours.getNumAliases(), oracle.getNumAliases());
      for (auto [a, b] : llvm::zip(ours.getAliases(), oracle.getAliases())) {
        EXPECT_EQ(a.opOperand, b.opOperand);
        EXPECT_EQ(a.relation, b.relation);
        EXPECT_EQ(a.isDefinite, b.isDefinite);
      }
      ++compared;
      aliased += ours.getNumAliases();
    }
  });
  // Every call and loop result above was compared, and the cases are not
  // trivial: most results alias some operand.
  EXPECT_EQ(compared, 11);
  EXPECT_GE(aliased, 7);
}

} // namespace
