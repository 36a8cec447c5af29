#include "config/cli.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

namespace starling::config {
namespace {

using ::testing::HasSubstr;

cli_parse_result parse(std::vector<std::string_view> args) { return parse_cli(args); }

TEST(config_cli, no_arguments_gives_the_defaults) {
    const auto result = parse({});
    ASSERT_TRUE(result.ok());
    EXPECT_EQ(result.options.config_file, "config/starling.yml");
    EXPECT_FALSE(result.options.validate_config);
    EXPECT_FALSE(result.options.help);
    EXPECT_FALSE(result.options.version);
}

TEST(config_cli, config_file_in_every_spelling) {
    EXPECT_EQ(parse({"--config", "/etc/a.yml"}).options.config_file, "/etc/a.yml");
    EXPECT_EQ(parse({"-c", "b.yml"}).options.config_file, "b.yml");
    EXPECT_EQ(parse({"--config=c.yml"}).options.config_file, "c.yml");
}

TEST(config_cli, flags) {
    const auto result = parse({"--validate-config", "--help", "--version", "--config", "x.yml"});
    ASSERT_TRUE(result.ok()) << result.error;
    EXPECT_TRUE(result.options.validate_config);
    EXPECT_TRUE(result.options.help);
    EXPECT_TRUE(result.options.version);
    EXPECT_EQ(result.options.config_file, "x.yml");
    EXPECT_TRUE(parse({"-h"}).options.help);
}

TEST(config_cli, config_without_a_file_is_an_error) {
    EXPECT_THAT(parse({"--config"}).error, HasSubstr("--config needs a file name"));
    EXPECT_THAT(parse({"-c"}).error, HasSubstr("-c needs a file name"));
    EXPECT_THAT(parse({"--config="}).error, HasSubstr("--config needs a file name"));
    EXPECT_FALSE(parse({"--config", ""}).ok());
}

TEST(config_cli, unknown_argument_is_an_error_naming_it) {
    const auto result = parse({"--validate-config", "--port=1"});
    EXPECT_FALSE(result.ok());
    EXPECT_THAT(result.error, HasSubstr("'--port=1'"));
}

TEST(config_cli, argv_form_skips_the_program_name) {
    const char* argv[] = {"starlingd", "--config", "y.yml", "--validate-config"};
    const auto result = parse_cli(4, argv);
    ASSERT_TRUE(result.ok());
    EXPECT_EQ(result.options.config_file, "y.yml");
    EXPECT_TRUE(result.options.validate_config);
}

TEST(config_cli, help_lists_options_and_the_environment_rule) {
    const auto help = cli_help_text("starlingd");
    EXPECT_THAT(help, HasSubstr("Usage: starlingd"));
    for (const char* option :
         {"--config FILE", "--validate-config", "--help", "--version", "config/starling.yml"}) {
        EXPECT_THAT(help, HasSubstr(option));
    }
    EXPECT_THAT(help, HasSubstr("overridden by its environment variable"));
    EXPECT_THAT(help, HasSubstr("${ENV_NAME:default}"));
}

TEST(config_cli, version_names_program_and_version) {
    const auto text = cli_version_text("starlingd");
    EXPECT_THAT(text, HasSubstr("starlingd "));
    EXPECT_THAT(text, ::testing::Not(HasSubstr("unknown")));
}

}  // namespace
}  // namespace starling::config
