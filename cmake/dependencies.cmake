# Every dependency comes from Debian's packages (scripts/install-deps.sh); nothing is downloaded
# at build time.
find_package(Threads REQUIRED)
find_package(Boost 1.81 REQUIRED)
find_package(OpenSSL REQUIRED)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(prometheus-cpp REQUIRED COMPONENTS core)
find_package(SQLite3 REQUIRED)
find_package(nlohmann_json REQUIRED)
# libxcrypt: bcrypt for MQTT_BASIC passwords (Debian libcrypt-dev).
find_library(STARLING_CRYPT_LIBRARY crypt REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(URCU REQUIRED IMPORTED_TARGET liburcu-memb)
# hiredis: the Redis device inbox (src/adapters/redis; Debian libhiredis-dev).
pkg_check_modules(HIREDIS REQUIRED IMPORTED_TARGET hiredis)
# libpqxx 6 (Debian libpqxx-dev): the PostgreSQL metadata store (src/adapters/postgres).
pkg_check_modules(PQXX REQUIRED IMPORTED_TARGET libpqxx)
# RE2 (Debian libre2-dev): every pattern matched against client-supplied strings (topic rules,
# credential CN patterns, blocked-client regexes; src/auth/pattern.h). Linear-time automata, no
# recursion: a 64 KiB topic cannot blow the stack as it does libstdc++'s std::regex.
pkg_check_modules(RE2 REQUIRED IMPORTED_TARGET re2)
if(STARLING_BUILD_TESTS)
    find_package(GTest REQUIRED)
    include(GoogleTest)
    # libjwt signs the tokens of the JWT provider tests: an implementation independent of ours.
    pkg_check_modules(JWT REQUIRED IMPORTED_TARGET libjwt)
endif()

# Every translation unit must see Asio configured the same way (a define visible to some and not
# others changes class layouts: an ODR violation that crashes at run time).
add_compile_definitions(BOOST_ASIO_NO_DEPRECATED)
# librdkafka (Debian librdkafka-dev, C API): the Kafka adapter of the message log.
pkg_check_modules(RDKAFKA REQUIRED IMPORTED_TARGET rdkafka)
# Paho MQTT C (Debian libpaho-mqtt-dev): the MQTT client of MQTT integrations (a bridge).
find_package(eclipse-paho-mqtt-c REQUIRED)
