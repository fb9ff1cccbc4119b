#!/usr/bin/python3
"""Checks of the hydra and dftracer stand-ins (bench/dlio/standins) on a config
tree shaped like DLIO's, without DLIO:

    /usr/bin/python3 bench/dlio/standins/test_standins.py

Each case is what Hydra 1.3 does with the same input (its docs' "Override
grammar" and "Defaults List"); the stand-in must not silently differ."""

import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from omegaconf import OmegaConf  # noqa: E402

import hydra  # noqa: E402
from hydra import compose, initialize_config_dir  # noqa: E402
from hydra._compose import ConfigCompositionException, MissingConfigException, parse_value  # noqa: E402
from dftracer.python import DFTRACER_ENABLE, ai, dft_fn  # noqa: E402


def _tree(root):
    files = {
        "config.yaml": """
            defaults:
              - _self_
              - workload: default
              - override hydra/job_logging: disabled
            hydra:
              run:
                dir: ./hydra_log/${workload.model.name}/${now:%Y-%m-%d}
            """,
        "workload/default.yaml": """
            model:
              name: default
            train:
              epochs: 10
              computation_time: 1.00
            reader:
              batch_size: 4
            """,
        "workload/other.yaml": """
            model:
              name: other
            train:
              epochs: 1
            """,
    }
    for name, text in files.items():
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(textwrap.dedent(text))


class HydraStandin(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.conf = os.path.join(cls.tmp.name, "configs")
        _tree(cls.conf)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def compose(self, *overrides):
        with initialize_config_dir(config_dir=self.conf, version_base=None):
            return compose(config_name="config", overrides=list(overrides))

    def test_defaults_and_group_choice(self):
        self.assertEqual(self.compose().workload.train.epochs, 10)
        cfg = self.compose("workload=other")
        self.assertEqual(cfg.workload.model.name, "other")
        self.assertNotIn("reader", cfg.workload)
        self.assertNotIn("hydra", cfg)

    def test_override_prefixes(self):
        cfg = self.compose("workload.train.epochs=3", "++workload.output.metric.exclude_start_steps=0",
                           "+workload.extra=x", "~workload.reader")
        self.assertEqual(cfg.workload.train.epochs, 3)
        self.assertEqual(cfg.workload.output.metric.exclude_start_steps, 0)
        self.assertEqual(cfg.workload.extra, "x")
        self.assertNotIn("reader", cfg.workload)
        with self.assertRaises(ConfigCompositionException):
            self.compose("workload.train.missing=1")  # plain: the key must exist
        with self.assertRaises(ConfigCompositionException):
            self.compose("+workload.train.epochs=1")  # +: it must not
        with self.assertRaises(MissingConfigException):
            self.compose("workload=nonesuch")

    def test_values(self):
        self.assertIs(parse_value("True"), True)
        self.assertIs(parse_value("null"), None)
        self.assertEqual(parse_value("1e-3"), 0.001)
        self.assertEqual(parse_value("0.01"), 0.01)
        self.assertEqual(parse_value("-4"), -4)
        self.assertEqual(parse_value("[1024,128]"), [1024, 128])
        self.assertEqual(parse_value("'a,b'"), "a,b")
        self.assertEqual(parse_value("dlio_plugins.x.Y"), "dlio_plugins.x.Y")
        with self.assertRaises(ConfigCompositionException):
            parse_value("a,b")  # a sweep: refused in a run
        cfg = self.compose("++workload.train.computation_time.mean=0.5")
        self.assertEqual(OmegaConf.to_container(cfg.workload.train.computation_time), {"mean": 0.5})

    def test_main_writes_record_and_sets_hydra_config(self):
        out = os.path.join(self.tmp.name, "run")
        script = os.path.join(self.tmp.name, "task.py")
        with open(script, "w") as f:
            f.write(textwrap.dedent(f"""
                import hydra, json, os
                @hydra.main(version_base=None, config_path={self.conf!r}, config_name="config")
                def task(cfg):
                    h = hydra.core.hydra_config.HydraConfig.get()
                    print(json.dumps({{"epochs": cfg.workload.train.epochs, "out": h["runtime"]["output_dir"],
                                      "choice": h.runtime.choices.workload, "has_hydra": "hydra" in cfg}}))
                task()
                """))
        env = dict(os.environ, PYTHONPATH=HERE)
        r = subprocess.run([sys.executable, script, "workload=other", "workload.train.epochs=2",
                            f"hydra.run.dir={out}"], capture_output=True, text=True, env=env,
                           cwd=self.tmp.name)
        self.assertEqual(r.returncode, 0, r.stderr)
        got = OmegaConf.create(r.stdout.strip().splitlines()[-1])
        self.assertEqual((got.epochs, got.out, got.choice, got.has_hydra), (2, out, "other", False))
        for name in ("config.yaml", "hydra.yaml", "overrides.yaml"):
            self.assertTrue(os.path.isfile(os.path.join(out, ".hydra", name)), name)
        self.assertEqual(OmegaConf.load(os.path.join(out, ".hydra", "overrides.yaml")),
                         ["workload=other", "workload.train.epochs=2"])
        r = subprocess.run([sys.executable, script, "--cfg", "job"], capture_output=True, text=True,
                           env=env, cwd=self.tmp.name)
        self.assertIn("epochs: 10", r.stdout)
        self.assertTrue(hydra.STANDIN)


class DftracerStandin(unittest.TestCase):
    def test_noops(self):
        self.assertFalse(DFTRACER_ENABLE)
        dlp = dft_fn("MODULE")

        def f(x):
            return x + 1

        self.assertIs(dlp.log(f), f)
        self.assertIs(dlp.log_init(f), f)
        self.assertIs(ai(f), f)
        self.assertIs(ai.pipeline.train(f), f)
        self.assertIs(ai.checkpoint.capture(f), f)
        self.assertEqual(list(ai.pipeline.epoch.iter(range(3), include_iter=False)), [0, 1, 2])
        self.assertEqual(list(ai.dataloader.fetch.iter([4, 5])), [4, 5])
        ai.update(step=1)
        ai.data.item.start()
        ai.data.item.stop()
        with dft_fn(name="x", cat="y") as p:
            p.update(epoch=1)


if __name__ == "__main__":
    unittest.main()
