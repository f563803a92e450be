//===- Autodiff.cpp - reverse-mode autodiff of a loss function ------------===//
//
// @F(params..., inputs...) -> loss  gives  @F_grad(same args) -> (loss, dparams...)
//
// A pipeline stage (lcc-split-stage) is differentiated the same way: the
// values it receives are differentiated like parameters (their gradients are
// sent back), and a stage that sends values on instead of returning the loss
// takes their gradients as seeds:
// @S(params..., inputs..., recvs...) -> sends  gives
// @S_grad(same args, seeds...) -> (sends, dparams..., drecvs...)
//
// The forward body is cloned into @F_grad and the backward appended after it,
// so the VJPs read forward values directly (no recomputation, nothing saved
// explicitly: later passes see one flat function and can fuse or
// rematerialize as they like).
//
// Which ops get backward work: an op is *active* when one of its results is
// both varied (reachable forward from a trainable parameter through
// differentiable operands) and useful (reaches the loss backward through
// differentiable operands). Only active ops are asked for a VJP, and only
// for operands that are themselves varied and useful, so frozen parameters,
// integer ids, masks and side branches cost nothing. Ops whose results are
// not floats (cmp, iota, integer math) are never varied: they are constants
// of the backward.
//
//===----------------------------------------------------------------------===//
#include "dialects/lcc/LccOps.h"
#include "dialects/lcc/vjp/VjpUtils.h"
#include "passes/train/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/raw_ostream.h"

namespace lcc {
#define GEN_PASS_DEF_LCCAUTODIFFPASS
#include "passes/train/Passes.h.inc"
} // namespace lcc

using namespace mlir;

namespace {

bool isFloatTensor(Type t) {
  auto r = llvm::dyn_cast<RankedTensorType>(t);
  return r && llvm::isa<FloatType>(r.getElementType());
}

/// Whether operand `j` of `op` can carry a gradient. Ops without a VJP count
/// every float operand, so that when they sit on a path to the loss they are
/// found and reported rather than silently cutting the gradient.
bool differentiableOperand(Operation *op, unsigned j) {
  if (!isFloatTensor(op->getOperand(j).getType()))
    return false;
  if (auto vjp = llvm::dyn_cast<lcc::VjpOpInterface>(op))
    return vjp.isDifferentiableOperand(j);
  return true;
}

/// Values `op` reads without listing them as operands (region captures);
/// only ops without a VJP have regions, this is for finding them.
llvm::SetVector<Value> capturedValues(Operation *op) {
  llvm::SetVector<Value> captured;
  if (op->getNumRegions())
    getUsedValuesDefinedAbove(op->getRegions(), captured);
  return captured;
}

struct LccAutodiffPass : lcc::impl::LccAutodiffPassBase<LccAutodiffPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(differentiate(getOperation())))
      signalPassFailure();
  }

  LogicalResult differentiate(ModuleOp module);
};

LogicalResult LccAutodiffPass::differentiate(ModuleOp module) {
  auto fwd = module.lookupSymbol<func::FuncOp>(function);
  if (!fwd)
    return module.emitError() << "lcc-autodiff: no function @" << function
                              << " to differentiate (set the pass option function=...)";
  if (fwd.isExternal() || !fwd.getBody().hasOneBlock())
    return fwd.emitError() << "lcc-autodiff: @" << function
                           << " must have a body of a single block";
  // A pipeline stage (lcc-split-stage) other than the last returns what it
  // sends on, each seeded by the gradient it receives back.
  bool sends = fwd.getNumResults() > 0 && fwd.getResultAttr(0, "lcc.pipeline_send");
  auto lossType = fwd.getNumResults() == 1
                      ? llvm::dyn_cast<RankedTensorType>(fwd.getResultTypes()[0])
                      : RankedTensorType();
  if (!sends && (!lossType || lossType.getRank() != 0 || !isFloatTensor(lossType))) {
    // Printed by hand: diagnostics quote streamed types ('tensor<..>').
    std::string types;
    llvm::raw_string_ostream os(types);
    llvm::interleaveComma(fwd.getResultTypes(), os);
    return fwd.emitError() << "lcc-autodiff: @" << function
                           << " must return a single rank-0 float loss; it returns (" << types
                           << ")";
  }
  std::string gradName = function + "_grad";
  if (module.lookupSymbol(gradName))
    return fwd.emitError() << "lcc-autodiff: @" << gradName << " already exists";

  // Trainable parameters, in argument order.
  SmallVector<unsigned> trainable, received;
  for (unsigned i = 0; i < fwd.getNumArguments(); ++i) {
    if (fwd.getArgAttr(i, "lcc.pipeline_recv") && isFloatTensor(fwd.getArgument(i).getType()))
      received.push_back(i);
    auto name = fwd.getArgAttrOfType<StringAttr>(i, "lcc.param");
    if (!name)
      continue;
    if (!isFloatTensor(fwd.getArgument(i).getType()))
      return fwd.emitError() << "lcc-autodiff: parameter '" << name.getValue() << "' has type "
                             << fwd.getArgument(i).getType() << "; expected a float tensor";
    if (!fwd.getArgAttr(i, "lcc.frozen"))
      trainable.push_back(i);
  }

  OpBuilder b(module.getContext());
  b.setInsertionPointAfter(fwd);
  auto gradFn = llvm::cast<func::FuncOp>(b.clone(*fwd));
  gradFn.setName(gradName);
  gradFn.setPublic();
  // Every failure below leaves no half-built function behind.
  auto fail = [&]() {
    gradFn.erase();
    return failure();
  };

  Block &block = gradFn.getBody().front();
  auto ret = llvm::dyn_cast<func::ReturnOp>(block.getTerminator());
  if (!ret) {
    fwd.emitError() << "lcc-autodiff: @" << function << " must end with func.return";
    return fail();
  }
  SmallVector<Value> outputs(ret.getOperands());
  SmallVector<Operation *> ops;
  for (Operation &op : block.without_terminator())
    ops.push_back(&op);

  // Forward: values that depend on a trainable parameter.
  llvm::DenseSet<Value> varied;
  for (unsigned i : llvm::concat<unsigned>(trainable, received))
    varied.insert(gradFn.getArgument(i));
  for (Operation *op : ops) {
    bool any = false;
    for (unsigned j = 0; j < op->getNumOperands() && !any; ++j)
      any = varied.contains(op->getOperand(j)) && differentiableOperand(op, j);
    for (Value v : capturedValues(op))
      any |= varied.contains(v) && isFloatTensor(v.getType());
    if (any)
      for (Value r : op->getResults())
        if (isFloatTensor(r.getType()))
          varied.insert(r);
  }
  // Backward: values the loss depends on.
  llvm::DenseSet<Value> useful(outputs.begin(), outputs.end());
  for (Operation *op : llvm::reverse(ops)) {
    if (llvm::none_of(op->getResults(), [&](Value r) { return useful.contains(r); }))
      continue;
    for (unsigned j = 0; j < op->getNumOperands(); ++j)
      if (differentiableOperand(op, j))
        useful.insert(op->getOperand(j));
    for (Value v : capturedValues(op))
      if (isFloatTensor(v.getType()))
        useful.insert(v);
  }
  auto onPath = [&](Value v) { return varied.contains(v) && useful.contains(v); };
  SmallVector<Operation *> active;
  for (Operation *op : ops)
    if (llvm::any_of(op->getResults(), onPath))
      active.push_back(op);

  // Reject every op on the path that cannot be differentiated before
  // building anything, so one run reports all of them.
  bool rejected = false;
  for (Operation *op : active)
    if (!llvm::isa<lcc::VjpOpInterface>(op)) {
      op->emitError() << "'" << op->getName()
                      << "' has no VJP: autodiff cannot differentiate through it";
      rejected = true;
    }
  if (rejected)
    return fail();

  // Reverse sweep. Backward ops are appended before the return, in reverse
  // order of the forward; fan-out accumulates with lcc.add.
  llvm::DenseMap<Value, Value> grads;
  b.setInsertionPoint(ret);
  // The seed: 1, or (seed-arg) a trailing argument, so that loss scaling can
  // run the whole backward on scale * dL (see lcc-build-train-step); a
  // stage's sends are seeded by trailing arguments {lcc.pipeline_seed = k}.
  // (The last rank of an interleaved pipeline returns both: its earlier
  // stages' sends, then the loss.)
  for (auto [k, out] : llvm::enumerate(outputs)) {
    auto type = llvm::cast<RankedTensorType>(out.getType());
    Value seed;
    bool sent = bool(fwd.getResultAttr(unsigned(k), "lcc.pipeline_send"));
    if (seedArg || sent) {
      NamedAttribute what =
          sent ? b.getNamedAttr("lcc.pipeline_seed", b.getI64IntegerAttr(int64_t(k)))
               : b.getNamedAttr("lcc.loss_seed", b.getUnitAttr());
      if (sent && !isFloatTensor(type))
        continue; // integers have no gradient
      if (failed(gradFn.insertArgument(gradFn.getNumArguments(), type, b.getDictionaryAttr(what),
                                       out.getLoc())))
        return fail();
      seed = gradFn.getArgument(gradFn.getNumArguments() - 1);
    }
    if (onPath(out) && !grads.count(out))
      grads[out] = seed ? seed : lcc::vjp::fill(b, out.getLoc(), type, 1.0);
    else if (onPath(out))
      grads[out] = lcc::vjp::add(b, out.getLoc(), grads[out], seed);
  }
  for (Operation *op : llvm::reverse(active)) {
    SmallVector<Value> resultGrads;
    for (Value r : op->getResults())
      resultGrads.push_back(grads.lookup(r));
    if (llvm::all_of(resultGrads, [](Value g) { return !g; }))
      continue;
    SmallVector<bool> needed;
    for (unsigned j = 0; j < op->getNumOperands(); ++j)
      needed.push_back(onPath(op->getOperand(j)) && differentiableOperand(op, j));
    SmallVector<Value> operandGrads;
    auto vjp = llvm::cast<lcc::VjpOpInterface>(op);
    if (failed(vjp.buildVjp(b, resultGrads, needed, operandGrads)))
      return fail();
    if (operandGrads.size() != op->getNumOperands()) {
      op->emitError() << "internal error: the VJP of '" << op->getName() << "' returned "
                      << operandGrads.size() << " gradients for " << op->getNumOperands()
                      << " operands";
      return fail();
    }
    for (unsigned j = 0; j < op->getNumOperands(); ++j) {
      Value operand = op->getOperand(j), g = operandGrads[j];
      if (!needed[j] || !g)
        continue;
      if (g.getType() != operand.getType()) {
        op->emitError() << "internal error: the VJP of '" << op->getName()
                        << "' built a gradient of type " << g.getType() << " for operand " << j
                        << " of type " << operand.getType();
        return fail();
      }
      auto [it, inserted] = grads.try_emplace(operand, g);
      if (!inserted)
        it->second = lcc::vjp::add(b, op->getLoc(), it->second, g);
    }
  }

  // (loss or sends, gradients in argument order, then the received values'
  // gradients); a parameter the loss does not depend on gets an explicit
  // zero so the signature never depends on the body.
  SmallVector<Value> results(outputs);
  SmallVector<DictionaryAttr> resultAttrs;
  for (unsigned k = 0; k < outputs.size(); ++k)
    resultAttrs.push_back(fwd.getResultAttrDict(k) ? fwd.getResultAttrDict(k)
                                                   : b.getDictionaryAttr({}));
  auto gradOf = [&](unsigned i, NamedAttribute what) {
    BlockArgument arg = gradFn.getArgument(i);
    Value g = grads.lookup(arg);
    if (!g)
      g = lcc::vjp::fill(b, arg.getLoc(), arg.getType(), 0.0);
    results.push_back(g);
    resultAttrs.push_back(b.getDictionaryAttr(what));
  };
  for (unsigned i : trainable)
    gradOf(i, b.getNamedAttr("lcc.grad_of", fwd.getArgAttrOfType<StringAttr>(i, "lcc.param")));
  for (unsigned i : received)
    gradOf(i, b.getNamedAttr("lcc.grad_of_recv", fwd.getArgAttr(i, "lcc.pipeline_recv")));
  func::ReturnOp::create(b, ret.getLoc(), results);
  ret.erase();
  gradFn.setType(b.getFunctionType(gradFn.getArgumentTypes(), ValueRange(results).getTypes()));
  gradFn.setAllResultAttrs(resultAttrs);
  return success();
}

} // namespace
