"""Packaging for torchbenchmark: `pip install -e .` makes `import torchbenchmark` work anywhere."""

from setuptools import find_packages, setup

setup(
    name="torchbenchmark",
    version="0.1.0",
    description="Real PyTorch models behind one contract, and diagnostics of where their step time goes",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    packages=find_packages(include=["torchbenchmark", "torchbenchmark.*"]),
    python_requires=">=3.10",
    install_requires=[
        "torch>=2.4",
        "torchvision>=0.19",
        "transformers>=4.44",
        "numpy>=1.24",
        "tabulate>=0.9",
        "tqdm>=4.60",
        "matplotlib>=3.8",
    ],
    extras_require={"notebook": ["pandas>=2"], "test": ["pytest>=7", "pandas>=2"], "dev": ["pytest>=7", "mutmut>=3.8"]},
)
