import Foundation
import Platform

/// Plugin steps and whole-login plugins (SPEC section 5).
extension SiteBuilder {
    mutating func buildPlugin(_ file: StepFile, key: String, scope: VariableScope) -> PluginStep? {
        guard let plugin = file.plugin else { return nil }
        let before = checker.diagnostics.count
        let executable: String
        if plugin.value.isEmpty {
            checker.error(plugin.mark, "\(key).plugin: empty plugin name")
            return nil
        } else if plugin.value.contains("/") {
            executable = checker.path(plugin.value)
        } else {
            executable = (pluginsDirectory as NSString).appendingPathComponent(plugin.value)
        }
        var isDirectory: ObjCBool = false
        if !FileManager.default.fileExists(atPath: executable, isDirectory: &isDirectory) {
            checker.error(plugin.mark, "\(key): plugin '\(plugin.value)' not found (looked for \(executable))")
        } else if isDirectory.boolValue || !FileManager.default.isExecutableFile(atPath: executable) {
            checker.error(plugin.mark, "\(key): plugin '\(plugin.value)' is not an executable file (chmod +x \(executable))")
        } else {
            // SPEC section 3: a plugin is code the daemon runs, trusted as the daemon's own program is.
            do throws(UntrustedCodeError) {
                try CodeFile.check(executable)
            } catch {
                checker.error(plugin.mark, "\(key): plugin '\(plugin.value)' refused: \(error)")
            }
        }

        var step = PluginStep(plugin: plugin.value, executablePath: executable)
        if let with = file.with, !with.node.isNull {
            if with.node.pairs == nil {
                checker.error(with.node.mark, "\(key).with: expected a mapping of names to values, found \(with.node.kindDescription)")
            } else {
                step.with = checker.jsonTemplate(with.node, key: "\(key).with")
                for variable in step.with.variables { checkVariable(variable, at: with.node.mark, key: key, scope: scope) }
            }
        }
        if let env = file.env, !env.node.isNull {
            step.environment = buildPluginEnvironment(env.node, key: "\(key).env", scope: scope)
        }
        if let timeout = checker.positiveDuration(file.timeout, key: "\(key).timeout") { step.timeout = timeout }
        step.passCredentials = file.passCredentials?.value ?? false
        return checker.diagnostics.count == before ? step : nil
    }

    private mutating func buildPluginEnvironment(_ node: YAMLNode, key: String, scope: VariableScope) -> [PluginStep.EnvironmentEntry] {
        var entries: [PluginStep.EnvironmentEntry] = []
        if let items = node.items {
            for item in items {
                guard let name = item.scalarText, Checker.isEnvironmentName(name) else {
                    checker.error(item.mark, "\(key): \(item.kindDescription) is not an environment variable name")
                    continue
                }
                guard !isPassphraseVariable(name, at: item.mark, key: key) else { continue }
                entries.append(.inherit(name))
            }
        } else if let pairs = node.pairs {
            for pair in pairs {
                guard Checker.isEnvironmentName(pair.name) else {
                    checker.error(pair.key.mark, "\(key): '\(pair.name)' is not an environment variable name")
                    continue
                }
                guard let text = pair.value.scalarText, !pair.value.isNull else {
                    checker.error(pair.value.mark, "\(key).\(pair.name): expected a text, found \(pair.value.kindDescription)")
                    continue
                }
                guard let template = checker.template(Marked(value: text, mark: pair.value.mark), key: "\(key).\(pair.name)")
                else { continue }
                for variable in template.variables { checkVariable(variable, at: pair.value.mark, key: key, scope: scope) }
                entries.append(.set(name: pair.name, value: template))
            }
        } else {
            checker.error(node.mark, "\(key): expected a list of names or a mapping of names to values")
        }
        return entries
    }
}

extension StepFile {
    /// A whole-login plugin (`login: {plugin: ...}`) as the plugin step it amounts to, so both are
    /// checked by ``SiteBuilder/buildPlugin(_:key:scope:)``.
    init(plugin: Marked<String>, with: RawNode?, env: RawNode?, timeout: Marked<String>?, passCredentials: Marked<Bool>?) {
        self.plugin = plugin
        self.with = with
        self.env = env
        self.timeout = timeout
        self.passCredentials = passCredentials
    }
}
