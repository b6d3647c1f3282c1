#pragma once
// Kept so existing includes resolve: the error types live in core/status.hpp.
#include "core/status.hpp"
