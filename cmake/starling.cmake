# Helpers that every module uses to declare its library and its tests.

set(STARLING_WARNINGS -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion
    -Wno-missing-field-initializers)
# GCC 12 reports false maybe-uninitialized warnings inside <regex>'s std::function when
# std::regex is compiled at -O1 with sanitizers (auth rules, config validation).
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    list(APPEND STARLING_WARNINGS -Wno-maybe-uninitialized)
endif()
if(STARLING_WERROR)
    list(APPEND STARLING_WARNINGS -Werror)
endif()

# starling_library(<name> SOURCES ... [DEPS ...])
# Declares library starling_<name>, includes rooted at src/ and include/.
function(starling_library name)
    cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
    set(target starling_${name})
    add_library(${target} STATIC ${ARG_SOURCES})
    target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include
                                                ${PROJECT_BINARY_DIR}/generated)
    target_compile_options(${target} PRIVATE ${STARLING_WARNINGS})
    target_link_libraries(${target} PUBLIC ${ARG_DEPS})
endfunction()

# starling_test(<name> SOURCES ... [DEPS ...] [LABELS ...] [TIMEOUT s])
# Declares a GoogleTest executable registered with ctest; each test case becomes a ctest test
# carrying LABELS (unit, contract, integration, cluster, fuzz, concurrency).
function(starling_test name)
    cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;DEPS;LABELS" ${ARGN})
    if(NOT ARG_TIMEOUT)
        set(ARG_TIMEOUT 120)
    endif()
    add_executable(${name} ${ARG_SOURCES})
    target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include
                                               ${PROJECT_SOURCE_DIR}/tests)
    target_compile_options(${name} PRIVATE ${STARLING_WARNINGS} -Wno-conversion)
    target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gmock GTest::gtest_main)
    # gtest_discover_tests flattens a list-valued property (CMake 3.25 drops every label after
    # the first, and the TIMEOUT with it), so several labels travel as one joined label:
    # "unit_concurrency". ctest -L takes a regular expression matched against each label, so
    # both -L unit and -L concurrency still select it.
    list(JOIN ARG_LABELS "_" joined_labels)
    gtest_discover_tests(${name}
        PROPERTIES LABELS "${joined_labels}" TIMEOUT ${ARG_TIMEOUT}
        DISCOVERY_TIMEOUT 60)
endfunction()
