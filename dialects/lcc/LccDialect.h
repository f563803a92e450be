//===- LccDialect.h - the lcc dialect ---------------------------*- C++ -*-===//
#ifndef LCC_DIALECTS_LCC_LCCDIALECT_H
#define LCC_DIALECTS_LCC_LCCDIALECT_H

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dialect.h"

#include "dialects/lcc/LccDialect.h.inc"

#endif
