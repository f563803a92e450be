//===- LccDialect.td - the lcc dialect ---------------------*- tablegen -*-===//
//
// Tensor ops with value semantics: what a frontend (the Transformer DSL, ONNX)
// produces and what autodiff, fusion and sharding passes transform.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_DIALECT_TD
#define LCC_DIALECT_TD

include "mlir/IR/OpBase.td"

def Lcc_Dialect : Dialect {
  let name = "lcc";
  let cppNamespace = "::lcc";
  let summary = "Tensor ops for training neural networks";
  let description = [{
    Ops on ranked, statically shaped tensors with value semantics. Float
    element types are f32 (the default), f64 (used by fp64 gradient checks),
    bf16 and f16 (mixed precision). Elementwise ops broadcast as NumPy does.
  }];
  let hasConstantMaterializer = 1;
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
}

class Lcc_Op<string mnemonic, list<Trait> traits = []>
    : Op<Lcc_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def Lcc_FloatElement : AnyTypeOf<[F32, F64, BF16, F16]>;
def Lcc_FloatTensor : RankedTensorOf<[F32, F64, BF16, F16]>;
def Lcc_IndexTensor : RankedTensorOf<[I32, I64]>;
def Lcc_BoolTensor : RankedTensorOf<[I1]>;
def Lcc_AnyTensor : RankedTensorOf<[F32, F64, BF16, F16, I32, I64, I1]>;
def Lcc_ScalarFloatTensor : 0DTensorOf<[F32, F64, BF16, F16]>;

#endif // LCC_DIALECT_TD
