#pragma once

// Test certificates made at test time with the openssl CLI in a fresh temporary directory: a
// CA, a server certificate for 127.0.0.1/localhost and client certificates. Nothing is checked
// in, so nothing expires.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

namespace starling::net::testing {

class test_pki {
  public:
    test_pki() {
        std::random_device rd;
        dir_ = std::filesystem::temp_directory_path() /
               ("starling-pki-" + std::to_string(rd()) + std::to_string(rd()));
        std::filesystem::create_directories(dir_);
    }
    ~test_pki() {
        std::error_code ignored;
        std::filesystem::remove_all(dir_, ignored);
    }
    test_pki(const test_pki&) = delete;
    test_pki& operator=(const test_pki&) = delete;

    std::filesystem::path path(const std::string& name) const { return dir_ / name; }

    // <name>.pem / <name>.key: a self-signed CA.
    void make_ca(const std::string& name) {
        run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 "
            "-subj '/CN=" +
            name + "' -keyout " + q(name + ".key") + " -out " + q(name + ".pem"));
    }

    // <name>.pem / <name>.key: a certificate with CN `cn` signed by CA `ca`, valid for `days`.
    void make_cert(const std::string& name, const std::string& cn, const std::string& ca,
                   int days = 2) {
        const auto ext = path(name + ".ext");
        std::ofstream(ext) << "subjectAltName=IP:127.0.0.1,DNS:localhost\n";
        run("openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj '/CN=" + cn +
            "' -keyout " + q(name + ".key") + " -out " + q(name + ".csr"));
        run("openssl x509 -req -days " + std::to_string(days) + " -in " + q(name + ".csr") +
            " -CA " + q(ca + ".pem") + " -CAkey " + q(ca + ".key") + " -CAcreateserial -extfile " +
            ext.string() + " -out " + q(name + ".pem"));
    }

  private:
    std::string q(const std::string& name) const { return "'" + path(name).string() + "'"; }
    static void run(const std::string& command) {
        const int rc = std::system((command + " >/dev/null 2>&1").c_str());
        ASSERT_EQ(rc, 0) << command;
    }

    std::filesystem::path dir_;
};

}  // namespace starling::net::testing
