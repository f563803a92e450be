// RUN: lcc-opt %s --lcc-plan-memory -verify-diagnostics
// Tests passes/PlanMemory.cpp.

// Liveness by position needs one straight-line block.
// expected-error @+1 {{lcc-plan-memory: @branchy has control flow; plans need one straight-line block}}
func.func @branchy(%c: i1) {
  cf.cond_br %c, ^a, ^b
^a:
  return
^b:
  return
}
