// libFuzzer target: any bytes through the parser and, when they parse, elaboration of every
// model and plan. A crash, a hang, a leak or a sanitizer report is a bug; diagnostics are fine.
#include "frontend/Compilation.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 16384)
    return 0; // large inputs only slow the search down
  using namespace hspmd::frontend;
  SourceManager sources;
  CollectingSink sink;
  DiagnosticEngine diags(sink);
  Compilation compilation(sources, diags, HSPMD_STDLIB_DIR);
  // Named inside the source tree so that `import "nn"` and relative imports resolve.
  const FileAst *ast = compilation.loadText(HSPMD_SOURCE_DIR "/examples/fuzz-input.hspmd",
                                            std::string(reinterpret_cast<const char *>(data), size));
  if (ast)
    compilation.checkFile(*ast);
  for (const auto &diagnostic : sink.diagnostics)
    (void)renderDiagnostic(diagnostic, &sources);
  return 0;
}
