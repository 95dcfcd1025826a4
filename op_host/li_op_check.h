// Argument checks of the op_host tiling and shape inference: one line per rule, and the message
// names the input, the value received and the rule -- as the Python checks do (SPEC §4).
#ifndef CUSTOM_OPS_LI_OP_CHECK_H
#define CUSTOM_OPS_LI_OP_CHECK_H

#include <cstdio>

#include "graph/ge_error_codes.h"

// CHECK_RULE(ok, opName, "sparse_count must be in [1, 2048], got %ld", value)
#define CHECK_RULE(ok, opName, fmt, ...)                                                  \
    do {                                                                                  \
        if (!(ok)) {                                                                      \
            std::fprintf(stderr, "[ERROR] %s: " fmt "\n", (opName), ##__VA_ARGS__);       \
            return ge::GRAPH_FAILED;                                                      \
        }                                                                                 \
    } while (0)

#define CHECK_NOT_NULL(ptr, opName, what) CHECK_RULE((ptr) != nullptr, opName, "%s must be given", what)

#define RETURN_IF_FAILED(status)                                                          \
    do {                                                                                  \
        if ((status) != ge::GRAPH_SUCCESS) {                                              \
            return ge::GRAPH_FAILED;                                                      \
        }                                                                                 \
    } while (0)

#endif  // CUSTOM_OPS_LI_OP_CHECK_H
