# Runs one two-step interop test: a producer writes .beton files into a fresh WORK_DIR, then a
# consumer reads them. Invoked by CTest as `cmake -D... -P run_interop.cmake`.
#
#   MODE=ours  WRITER (ffcv_interop_write), PYTHON, CHECKER (check_ours_with_ffcv.py)
#              our writer -> Python FFCV reads and checks
#   MODE=live  PYTHON, MAKER (make_golden.py), READER (ffcv_interop_read_golden)
#              Python FFCV writes fresh golden files -> our reader checks them
#   MODE=packed PYTHON, CHECKER (check_packed_bits.py), CLI (ffcv)
#              `ffcv write npy --pack-bits` -> Python FFCV reads and unpacks the features
# WORK_DIR is removed first, and again when the test passes (kept for inspection on failure).
cmake_minimum_required(VERSION 3.22)

foreach(var MODE WORK_DIR PYTHON)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_interop.cmake: ${var} is not set")
  endif()
endforeach()

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

function(run_step description)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${description} failed (${rc}); files kept in ${WORK_DIR}")
  endif()
endfunction()

if(MODE STREQUAL "ours")
  run_step("ffcv_interop_write" "${WRITER}" "${WORK_DIR}")
  run_step("check_ours_with_ffcv.py" "${PYTHON}" "${CHECKER}" "${WORK_DIR}")
elseif(MODE STREQUAL "live")
  run_step("make_golden.py" "${PYTHON}" "${MAKER}" --out "${WORK_DIR}")
  run_step("ffcv_interop_read_golden" "${CMAKE_COMMAND}" -E env "FFCV_GOLDEN_DIR=${WORK_DIR}"
           "${READER}")
elseif(MODE STREQUAL "packed")
  run_step("check_packed_bits.py" "${PYTHON}" "${CHECKER}" "${WORK_DIR}" "${CLI}")
else()
  message(FATAL_ERROR "run_interop.cmake: unknown MODE '${MODE}'")
endif()

file(REMOVE_RECURSE "${WORK_DIR}")
