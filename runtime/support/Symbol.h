//===- Symbol.h - a C function of the runtime by name -----------*- C++ -*-===//
//
// The kernels and collectives that compiled code calls, listed for JITs that
// bind symbols explicitly (the AOT code finds them through dlopen).
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_SUPPORT_SYMBOL_H
#define LCC_RUNTIME_SUPPORT_SYMBOL_H

namespace lcc {

/// Name and address; lists of them end with {nullptr, nullptr}.
struct RuntimeSymbol {
  const char *name;
  void *address;
};

} // namespace lcc

#endif
