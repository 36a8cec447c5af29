# starling_contract_objects(<name> <sources>...)
# A port contract suite's test bodies as an OBJECT library: an adapter's test executable links
# it whole, so the linker cannot drop TEST_P registrations the way it drops unreferenced
# members of a static archive. Included by each contract folder that declares one.
function(starling_contract_objects name)
    add_library(${name} OBJECT ${ARGN})
    target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include
                                              ${PROJECT_SOURCE_DIR}/tests)
    target_compile_options(${name} PRIVATE ${STARLING_WARNINGS} -Wno-conversion)
    target_link_libraries(${name} PUBLIC starling_base GTest::gtest GTest::gmock)
endfunction()

