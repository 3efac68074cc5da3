// A model-layer file that includes the search layer: check_layers.cmake must reject it.
#include "zerosearch/search/plan.hpp"
