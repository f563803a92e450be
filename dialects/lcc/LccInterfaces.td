//===- LccInterfaces.td - op interfaces of the lcc dialect -*- tablegen -*-===//
//
// Per-op hooks that later passes query instead of switching on op kinds, so
// that adding an op stays a handful of files. The cost interface serves
// reports and pipeline partitioning; the VJP interface serves autodiff; the
// sharding-rule interface (distributed training) is added beside them by the
// issue that needs it (see docs/architecture.md).
//
//===----------------------------------------------------------------------===//
#ifndef LCC_INTERFACES_TD
#define LCC_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Lcc_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::lcc";
  let description = [{
    A static cost estimate of one execution of the op: floating-point
    operations and bytes read plus written (every operand read once, every
    result written once, as an unfused kernel would).
  }];
  let methods = [
    InterfaceMethod<"Floating-point operations of one execution.",
      "int64_t", "getFlops", (ins), [{}], [{
        return ::lcc::defaultElementwiseFlops($_op.getOperation());
      }]>,
    InterfaceMethod<"Bytes read and written by an unfused execution.",
      "int64_t", "getBytesAccessed", (ins), [{}], [{
        return ::lcc::defaultBytesAccessed($_op.getOperation());
      }]>,
  ];
}

def Lcc_VjpOpInterface : OpInterface<"VjpOpInterface"> {
  let cppNamespace = "::lcc";
  let description = [{
    The reverse-mode derivative of an op (its vector-Jacobian product), built
    from lcc ops so that every later pass (fusion, sharding, lowering) treats
    the backward like the forward. Ops list this interface when they are
    differentiable; an op that overrides `buildVjp` has a real VJP, the default
    reports that the VJP is missing, naming the op.
  }];
  let methods = [
    InterfaceMethod<[{
        Builds the gradients of the operands at the builder's insertion point
        (after the op). `resultGrads[i]` is the gradient of the loss with
        respect to result i, or a null Value when no gradient reaches it.
        `needed[j]` says whether operand j's gradient is used; the method must
        not build work for unneeded operands. On success `operandGrads` holds
        one Value per operand: the gradient (same type as the operand), or
        null where it is not needed or the operand is not differentiable.
        On failure the method has emitted a diagnostic on the op.
      }],
      "::mlir::LogicalResult", "buildVjp",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::ArrayRef<bool>":$needed,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads),
      [{}], [{
        return $_op->emitOpError() << "has no VJP implementation yet; autodiff cannot "
                                   << "differentiate through it";
      }]>,
    InterfaceMethod<[{
        Whether operand `index` can carry a gradient: false for ids, masks and
        conditions (by default: operands whose element type is not a float).
      }],
      "bool", "isDifferentiableOperand", (ins "unsigned":$index), [{}], [{
        return ::llvm::isa<::mlir::FloatType>(
            ::mlir::getElementTypeOrSelf($_op->getOperand(index).getType()));
      }]>,
  ];
}

#endif // LCC_INTERFACES_TD
