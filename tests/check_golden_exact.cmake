# cmake -DCHECK=golden_check -DREFERENCE=hetero_a10x3_a6000x5.csv -DWORK=dir -P check_golden_exact.cmake
# golden_check compares bit for bit: the reference against itself passes, and a copy with one
# 'pipeline time' cell one ulp off (23.493629602617496 -> 23.4936296026175, what summing every
# torch.mean column in one order gave) or written as another repr of the same number fails.
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
file(READ "${REFERENCE}" text)

function(expect_result candidate_text want summary)
  file(WRITE "${WORK}/candidate.csv" "${candidate_text}")
  execute_process(COMMAND "${CHECK}" "${REFERENCE}" "${WORK}/candidate.csv"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out)
  if(NOT rc EQUAL want)
    message(FATAL_ERROR "golden_check returned ${rc}, expected ${want}:\n${out}")
  endif()
  if(NOT out MATCHES "${summary}")
    message(FATAL_ERROR "golden_check did not say '${summary}':\n${out}")
  endif()
endfunction()

expect_result("${text}" 0 "PASS: 1272/1272 reference rows matched, 0 with differing values")

string(FIND "${text}" ",23.493629602617496," at)
if(at EQUAL -1)
  message(FATAL_ERROR "the reference no longer has the pipeline time 23.493629602617496")
endif()
string(SUBSTRING "${text}" 0 ${at} head)
math(EXPR rest_at "${at} + 20")
string(SUBSTRING "${text}" ${rest_at} -1 tail)
expect_result("${head},23.4936296026175,${tail}" 1 "pipeline time: 23.493629602617496 vs 23.4936296026175")
# The same float64 value, spelled with a trailing zero: not the original's repr.
expect_result("${head},23.4936296026174960,${tail}" 1 "FAIL: 1272/1272 reference rows matched, 1 with differing values")
