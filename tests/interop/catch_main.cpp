// Catch2 v2 main for the interop tests (the unit tests have their own).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
