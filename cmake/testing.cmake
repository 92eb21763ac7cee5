# Helpers for tests: one CTest entry per test file, each with a timeout and
# labels. KGS_TEST_TIMEOUT_MULTIPLIER (environment, at configure time)
# stretches every timeout on slow machines.
set(KGS_TIMEOUT_MULT "$ENV{KGS_TEST_TIMEOUT_MULTIPLIER}")
if(NOT KGS_TIMEOUT_MULT)
  set(KGS_TIMEOUT_MULT 1)
endif()

# kgs_unit_test(NAME name SOURCES a.c b.c LIBS lib... [TIMEOUT s])
# Every unit test also links kgs_test_support (tests/unit/support: the shared
# builders); a static library, so a test that uses none of it pulls nothing.
function(kgs_unit_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "SOURCES;LIBS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 30)
  endif()
  math(EXPR t "${T_TIMEOUT} * ${KGS_TIMEOUT_MULT}")
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} kgs_test_support PkgConfig::CMOCKA)
  add_test(NAME ${T_NAME} COMMAND ${T_NAME})
  set_tests_properties(${T_NAME} PROPERTIES TIMEOUT ${t} LABELS unit
    ENVIRONMENT "NVML_SIM_LIBRARY=$<TARGET_FILE:nvml-sim>;KGS_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
endfunction()

# kgs_script_test(NAME name COMMAND cmd... LABELS l [TIMEOUT s])
# Integration tests: scripts that run the real binaries. They get the paths
# of the built artifacts through the environment.
function(kgs_script_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "COMMAND;LABELS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 60)
  endif()
  if(NOT T_LABELS)
    set(T_LABELS integration)
  endif()
  math(EXPR t "${T_TIMEOUT} * ${KGS_TIMEOUT_MULT}")
  add_test(NAME ${T_NAME} COMMAND ${T_COMMAND})
  set_tests_properties(${T_NAME} PROPERTIES TIMEOUT ${t} LABELS "${T_LABELS}"
    ENVIRONMENT "GPU_METRICS=$<TARGET_FILE:gpu-metrics>;KEDA_GPU_SCALER=$<TARGET_FILE:keda-gpu-scaler>;NVML_SIM_LIBRARY=$<TARGET_FILE:nvml-sim>;KGS_SOURCE_DIR=${CMAKE_SOURCE_DIR};KGS_BUILD_DIR=${CMAKE_BINARY_DIR};KGS_SANITIZE=${KGS_SANITIZE}")
endfunction()
