// Cbc.h - COIN-OR CBC's C interface (Debian's coinor-libcbc-dev), loaded the first time the
// planner states an integer program. Linked, CBC's libraries (Cbc, Cgl, Clp, Osi, CoinUtils,
// LAPACK) cost every hspmc process about 6 ms as it starts, `hspmc --version` included, and
// only `hspmc plan` and the planner's checks solve programs (bench/startup.py measures it).
#pragma once

#include <coin/Cbc_C_Interface.h>

#include <stdexcept>
#include <string>

namespace hspmd::planner {

/// A library hspmd loads when it first needs it is not on this machine: an installation
/// problem, not the user's input nor hspmd's fault (hspmc says so and exits 1).
struct LibraryUnavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The entry points the planner calls, each with the type of its declaration in CBC's header.
struct CbcLibrary {
  decltype(&Cbc_newModel) newModel = nullptr;
  decltype(&Cbc_deleteModel) deleteModel = nullptr;
  decltype(&Cbc_setParameter) setParameter = nullptr;
  decltype(&Cbc_setMaximumSeconds) setMaximumSeconds = nullptr;
  decltype(&Cbc_addCol) addCol = nullptr;
  decltype(&Cbc_addRow) addRow = nullptr;
  decltype(&Cbc_solve) solve = nullptr;
  decltype(&Cbc_isProvenInfeasible) isProvenInfeasible = nullptr;
  decltype(&Cbc_isProvenOptimal) isProvenOptimal = nullptr;
  decltype(&Cbc_getColSolution) getColSolution = nullptr;
  decltype(&Cbc_numberSavedSolutions) numberSavedSolutions = nullptr;
};

/// CBC, loaded once per process (thread-safe); LibraryUnavailable where it cannot be loaded.
const CbcLibrary &cbc();

} // namespace hspmd::planner
