#include "cli/run.hpp"

int main(int argc, char** argv) { return zerosearch::cli::run(argc, argv); }
