// Lesson 1: one lambda, three ways to run it.
//
// A generic lambda over dyn:: operations runs eagerly on dyn::Array, is staged
// into a jaxpr by dyn::make_jaxpr, and the jaxpr can be interpreted again with
// dyn::eval_jaxpr. The printed jaxpr is JAX's text format.
#include <dynstage/core.hpp>

#include <iostream>

int main() {
  auto f = [](auto x, auto y) { return dyn::dot(x + 1, y + 1); };

  dyn::Array<float> x({3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  dyn::Array<float> y({4}, {1, 0, -1, 2});

  // Staged: the program f computes, for these argument types.
  dyn::ClosedJaxpr jaxpr = dyn::make_jaxpr(f)(x, y);
  std::cout << jaxpr << "\n";

  // Eager: the same lambda computes at once on arrays.
  dyn::Array<float> eager = dyn::eager(f)(x, y);
  std::cout << "eager:      " << eager << "\n";

  // The jaxpr, interpreted, gives the same numbers.
  dyn::Array<float> staged = dyn::eval_jaxpr(jaxpr, {x, y})[0].get<float>();
  std::cout << "eval_jaxpr: " << staged << "\n";
  return dyn::array_equal(eager, staged) ? 0 : 1;
}
