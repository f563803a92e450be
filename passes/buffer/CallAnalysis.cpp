//===- CallAnalysis.cpp - cheaper one-shot analysis of calls and loops ----===//
//
// See CallAnalysis.h for why. The answers follow from what one-shot module
// analysis records per function (FuncAnalysisState): which arguments a
// function reads and writes, which results alias which arguments, and which
// are equivalent to one. A callee whose analysis is not finished (a call in a
// recursion or before its callee) gets the conservative answers: read,
// written, aliasing every result.
//
//===----------------------------------------------------------------------===//
#include "passes/buffer/CallAnalysis.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using bufferization::AliasingValueList;
using bufferization::AnalysisState;
using bufferization::BufferRelation;
using bufferization::func_ext::FuncAnalysisState;
using bufferization::func_ext::FuncOpAnalysisState;
using Concept = bufferization::BufferizableOpInterface::Concept;

namespace {

/// The module analysis and the callee of `op`, when that callee's analysis is
/// finished; {nullptr, {}} otherwise (or outside one-shot module analysis).
std::pair<const FuncAnalysisState *, func::FuncOp> analyzedCallee(Operation *op,
                                                                  const AnalysisState &state) {
  auto *oneShot = llvm::dyn_cast<bufferization::OneShotAnalysisState>(&state);
  const FuncAnalysisState *funcs = oneShot ? oneShot->getExtension<FuncAnalysisState>() : nullptr;
  if (!funcs)
    return {nullptr, {}};
  auto call = llvm::cast<func::CallOp>(op);
  // The state's symbol tables: a hash lookup, not a walk of the module.
  auto callee = llvm::dyn_cast_or_null<func::FuncOp>(
      funcs->symbolTables.lookupNearestSymbolFrom(call, call.getCalleeAttr()));
  if (!callee)
    return {nullptr, {}};
  auto it = funcs->analyzedFuncOps.find(callee);
  if (it == funcs->analyzedFuncOps.end() || it->second != FuncOpAnalysisState::Analyzed)
    return {nullptr, {}};
  return {funcs, callee};
}

bool inSet(const llvm::DenseMap<func::FuncOp, FuncAnalysisState::BbArgIndexSet> &sets,
           func::FuncOp callee, int64_t index) {
  auto it = sets.find(callee);
  return it != sets.end() && it->second.contains(index);
}

bool reads(const Concept *, Operation *op, OpOperand &operand, const AnalysisState &state) {
  auto [funcs, callee] = analyzedCallee(op, state);
  return !funcs || inSet(funcs->readBbArgs, callee, operand.getOperandNumber());
}

bool writes(const Concept *, Operation *op, OpOperand &operand, const AnalysisState &state) {
  auto [funcs, callee] = analyzedCallee(op, state);
  return !funcs || inSet(funcs->writtenBbArgs, callee, operand.getOperandNumber());
}

/// Whether an argument whose aliasing results are `results` is the same
/// buffer as them: one aliasing result may be equivalent to the argument;
/// several are only "may alias".
bool isEquivalent(const FuncAnalysisState &funcs, func::FuncOp callee, ArrayRef<int64_t> results) {
  if (results.size() != 1)
    return false;
  auto eq = funcs.equivalentFuncArgs.find(callee);
  return eq != funcs.equivalentFuncArgs.end() && eq->second.contains(results.front());
}

AliasingValueList aliases(const Concept *, Operation *op, OpOperand &operand,
                          const AnalysisState &state) {
  auto [funcs, callee] = analyzedCallee(op, state);
  if (!funcs)
    return bufferization::detail::unknownGetAliasingValues(operand);
  AliasingValueList result;
  auto byArg = funcs->aliasingReturnVals.find(callee);
  if (byArg == funcs->aliasingReturnVals.end())
    return result;
  auto returned = byArg->second.find(operand.getOperandNumber());
  if (returned == byArg->second.end())
    return result;
  bool equivalent = isEquivalent(*funcs, callee, returned->second);
  for (int64_t index : returned->second)
    result.addAlias({op->getResult(unsigned(index)),
                     equivalent ? BufferRelation::Equivalent : BufferRelation::Unknown,
                     /*isDefinite=*/equivalent});
  return result;
}

/// Which operands a call's result aliases: the arguments whose aliasing
/// results include it, from one lookup of the callee.
bufferization::AliasingOpOperandList aliasedBy(const Concept *, Operation *op, Value value,
                                               const AnalysisState &state) {
  auto [funcs, callee] = analyzedCallee(op, state);
  auto result = llvm::dyn_cast<OpResult>(value);
  if (!funcs || !result)
    return bufferization::detail::defaultGetAliasingOpOperands(value, state);
  bufferization::AliasingOpOperandList list;
  auto byArg = funcs->aliasingReturnVals.find(callee);
  if (byArg == funcs->aliasingReturnVals.end())
    return list;
  // In operand order, as the default gives them.
  SmallVector<std::pair<int64_t, bool>> args;
  for (const auto &[arg, results] : byArg->second)
    if (llvm::is_contained(results, int64_t(result.getResultNumber())))
      args.push_back({arg, isEquivalent(*funcs, callee, results)});
  llvm::sort(args);
  for (auto [arg, equivalent] : args)
    list.addAlias({&op->getOpOperand(arg),
                   equivalent ? BufferRelation::Equivalent : BufferRelation::Unknown,
                   /*isDefinite=*/equivalent});
  return list;
}

/// Which operand an scf.for result aliases: its own init only (the loop's
/// other operands are its bounds and the other inits, which alias their own
/// results), asked as upstream's default would ask it.
bufferization::AliasingOpOperandList loopAliasedBy(const Concept *, Operation *op, Value value,
                                                   const AnalysisState &state) {
  auto result = llvm::dyn_cast<OpResult>(value);
  if (!result)
    return bufferization::detail::defaultGetAliasingOpOperands(value, state);
  OpOperand &init = llvm::cast<scf::ForOp>(op).getInitArgsMutable()[result.getResultNumber()];
  bufferization::AliasingOpOperandList list;
  for (const bufferization::AliasingValue &alias : state.getAliasingValues(init))
    if (alias.value == value)
      list.addAlias({&init, alias.relation, alias.isDefinite});
  return list;
}

} // namespace

void lcc::registerCallAnalysis(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, func::FuncDialect *) {
    std::optional<RegisteredOperationName> call =
        RegisteredOperationName::lookup(func::CallOp::getOperationName(), context);
    auto *model = call ? call->getInterface<bufferization::BufferizableOpInterface>() : nullptr;
    if (!model)
      return; // upstream's models are not registered: nothing to make cheaper
    model->bufferizesToMemoryRead = reads;
    model->bufferizesToMemoryWrite = writes;
    model->getAliasingValues = aliases;
    model->getAliasingOpOperands = aliasedBy;
  });
  registry.addExtension(+[](MLIRContext *context, scf::SCFDialect *) {
    std::optional<RegisteredOperationName> loop =
        RegisteredOperationName::lookup(scf::ForOp::getOperationName(), context);
    auto *model = loop ? loop->getInterface<bufferization::BufferizableOpInterface>() : nullptr;
    if (model)
      model->getAliasingOpOperands = loopAliasedBy;
  });
}
