# starling_fuzz_target(<name> SOURCES ... [DEPS ...])
#
# Every build: <name>_replay, the target's LLVMFuzzerTestOneInput linked with replay_main.cpp,
# registered with ctest (label "fuzz") to run every file of the target's corpus/ directory.
# With STARLING_FUZZ=ON (clang): also <name>, the real libFuzzer executable.
include_guard(GLOBAL)

function(starling_fuzz_target name)
    cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
    set(corpus ${CMAKE_CURRENT_SOURCE_DIR}/corpus)

    add_executable(${name}_replay ${ARG_SOURCES} ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/replay_main.cpp)
    target_include_directories(${name}_replay PRIVATE ${PROJECT_SOURCE_DIR}/src
                                                      ${PROJECT_SOURCE_DIR}/include)
    target_compile_options(${name}_replay PRIVATE ${STARLING_WARNINGS})
    target_link_libraries(${name}_replay PRIVATE ${ARG_DEPS})
    add_test(NAME ${name}_corpus COMMAND ${name}_replay ${corpus})
    set_tests_properties(${name}_corpus PROPERTIES LABELS fuzz TIMEOUT 300)

    if(STARLING_FUZZ)
        if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
            message(FATAL_ERROR "STARLING_FUZZ needs clang (libFuzzer)")
        endif()
        add_executable(${name} ${ARG_SOURCES})
        target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/src
                                                   ${PROJECT_SOURCE_DIR}/include)
        target_compile_options(${name} PRIVATE ${STARLING_WARNINGS} -fsanitize=fuzzer)
        target_link_options(${name} PRIVATE -fsanitize=fuzzer)
        target_link_libraries(${name} PRIVATE ${ARG_DEPS})
    endif()
endfunction()
