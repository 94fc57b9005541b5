// Cbc.cpp - loading COIN-OR CBC when the planner first needs it (planner/Cbc.h).
#include "planner/Cbc.h"

#include <dlfcn.h>

namespace hspmd::planner {

const CbcLibrary &cbc() {
  static const CbcLibrary loaded = [] {
    // By the soname of the library this was built against (HSPMD_CBC_SONAME, from CMake), as
    // the dynamic linker would find it, else in the folder it was found in at configure time.
    const std::string name = HSPMD_CBC_SONAME;
    void *library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!library)
      library = dlopen((std::string(HSPMD_CBC_DIR) + "/" + name).c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!library)
      throw LibraryUnavailable("cannot load COIN-OR CBC (" + name + "), which the planner's integer programs need: " +
                               dlerror() + " (install Debian's coinor-libcbc3, or run scripts/setup.sh)");
    auto symbol = [&](const char *symbolName) {
      void *found = dlsym(library, symbolName);
      if (!found)
        throw LibraryUnavailable(name + " has no " + symbolName + ": not the CBC hspmd was built against");
      return found;
    };
    CbcLibrary c;
#define HSPMD_CBC_SYMBOL(field, function) c.field = reinterpret_cast<decltype(c.field)>(symbol(#function))
    HSPMD_CBC_SYMBOL(newModel, Cbc_newModel);
    HSPMD_CBC_SYMBOL(deleteModel, Cbc_deleteModel);
    HSPMD_CBC_SYMBOL(setParameter, Cbc_setParameter);
    HSPMD_CBC_SYMBOL(setMaximumSeconds, Cbc_setMaximumSeconds);
    HSPMD_CBC_SYMBOL(addCol, Cbc_addCol);
    HSPMD_CBC_SYMBOL(addRow, Cbc_addRow);
    HSPMD_CBC_SYMBOL(solve, Cbc_solve);
    HSPMD_CBC_SYMBOL(isProvenInfeasible, Cbc_isProvenInfeasible);
    HSPMD_CBC_SYMBOL(isProvenOptimal, Cbc_isProvenOptimal);
    HSPMD_CBC_SYMBOL(getColSolution, Cbc_getColSolution);
    HSPMD_CBC_SYMBOL(numberSavedSolutions, Cbc_numberSavedSolutions);
#undef HSPMD_CBC_SYMBOL
    return c; // the library stays loaded for the process
  }();
  return loaded;
}

} // namespace hspmd::planner
