/*
 * nvml_codes.h - NVML's return codes as data, for the pure layers.
 *
 * The snapshot records which NVML code made a GPU or a field absent, and
 * core (the evaluator's messages), the CLI and the aggregator name it. The
 * list lives here, not in nvml/nvml_abi.h, so that src/core needs nothing
 * outside src/core; nvml_abi.h includes this file and declares the
 * nvmlReturn_t enum with the same values (tests/unit/nvml/test_nvml_abi.c
 * checks that the two agree).
 */
#ifndef KGS_CORE_NVML_CODES_H
#define KGS_CORE_NVML_CODES_H

/* X-macro over every nvmlReturn_t code: X(value, name without the
 * NVML_ERROR_ prefix). Used for nvml_code_name() (core/snapshot.h) and for
 * the stand-in's scenario error names (sim/scenario.c). */
#define NVML_RETURN_CODES(X)                                                                       \
    X(0, SUCCESS)                                                                                  \
    X(1, UNINITIALIZED)                                                                            \
    X(2, INVALID_ARGUMENT)                                                                         \
    X(3, NOT_SUPPORTED)                                                                            \
    X(4, NO_PERMISSION)                                                                            \
    X(5, ALREADY_INITIALIZED)                                                                      \
    X(6, NOT_FOUND)                                                                                \
    X(7, INSUFFICIENT_SIZE)                                                                        \
    X(8, INSUFFICIENT_POWER)                                                                       \
    X(9, DRIVER_NOT_LOADED)                                                                        \
    X(10, TIMEOUT)                                                                                 \
    X(11, IRQ_ISSUE)                                                                               \
    X(12, LIBRARY_NOT_FOUND)                                                                       \
    X(13, FUNCTION_NOT_FOUND)                                                                      \
    X(14, CORRUPTED_INFOROM)                                                                       \
    X(15, GPU_IS_LOST)                                                                             \
    X(16, RESET_REQUIRED)                                                                          \
    X(17, OPERATING_SYSTEM)                                                                        \
    X(18, LIB_RM_VERSION_MISMATCH)                                                                 \
    X(19, IN_USE)                                                                                  \
    X(20, MEMORY)                                                                                  \
    X(21, NO_DATA)                                                                                 \
    X(22, VGPU_ECC_NOT_SUPPORTED)                                                                  \
    X(23, INSUFFICIENT_RESOURCES)                                                                  \
    X(24, FREQ_NOT_SUPPORTED)                                                                      \
    X(25, ARGUMENT_VERSION_MISMATCH)                                                               \
    X(26, DEPRECATED)                                                                              \
    X(27, NOT_READY)                                                                               \
    X(28, GPU_NOT_FOUND)                                                                           \
    X(29, INVALID_STATE)                                                                           \
    X(30, RESET_TYPE_NOT_SUPPORTED)                                                                \
    X(999, UNKNOWN)

#endif
