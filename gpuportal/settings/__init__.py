"""Settings, read from the environment once (docs/configuration.md), one module a concept.

Every variable has a safe development default; a malformed value stops start-up with
ImproperlyConfigured instead of surfacing later as a confusing runtime error. Order matters only
where a later part reads an earlier one: `framework` reads `security`'s DEBUG and `jobs`' Redis,
`signin` adds single sign-on to `framework`'s INSTALLED_APPS.
"""
from gpuportal.settings.security import *  # noqa: F401,F403
from gpuportal.settings.portal import *  # noqa: F401,F403
from gpuportal.settings.jobs import *  # noqa: F401,F403
from gpuportal.settings.framework import *  # noqa: F401,F403
from gpuportal.settings.signin import *  # noqa: F401,F403
from gpuportal.settings.api import *  # noqa: F401,F403
