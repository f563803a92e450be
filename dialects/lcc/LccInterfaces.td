//===- LccInterfaces.td - op interfaces of the lcc dialect -*- tablegen -*-===//
//
// Per-op hooks that later passes query instead of switching on op kinds, so
// that adding an op stays a handful of files. The cost interface is used by
// `lcc --report` now and by pipeline partitioning later; the VJP interface
// (autodiff) and the sharding-rule interface (distributed training) are added
// beside it by the issues that need them (see docs/architecture.md).
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

#endif // LCC_INTERFACES_TD
